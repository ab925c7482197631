package horizontalautoscaler

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// recordedQueries answers each query with its value and records what was asked.
type recordedQueries struct {
	values map[string]float64

	mu    sync.Mutex
	asked []string
}

func (q *recordedQueries) QueryAt(_ context.Context, query string, at time.Time) (float64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, fmt.Sprintf("%s@%s", query, at.Format(time.TimeOnly)))
	value, ok := q.values[query]
	if !ok {
		return 0, fmt.Errorf("no value for %s", query)
	}
	return value, nil
}

func autoscalerWithMetric(name, query string, last *float64) *v1alpha1.HorizontalAutoscaler {
	ha := &v1alpha1.HorizontalAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.HorizontalAutoscalerSpec{MaxReplicas: 10, Metrics: []v1alpha1.Metric{{Prometheus: &v1alpha1.PrometheusMetricSource{
			Query: query, Target: v1alpha1.MetricTarget{Type: v1alpha1.AverageValueMetricType, Value: resource.MustParse("1")},
		}}}},
	}
	if last != nil {
		// As its last evaluation recorded it: three decimals.
		value := resource.MustParse(strconv.FormatFloat(*last, 'f', 3, 64))
		ha.Status.CurrentMetrics = []v1alpha1.MetricStatus{{Prometheus: &v1alpha1.PrometheusMetricStatus{
			Query: query, Current: v1alpha1.MetricValueStatus{Value: &value},
		}}}
	}
	return ha
}

// TestBoundaryEnqueuesChangedMetricsFirst: at a period boundary every autoscaler is enqueued,
// those whose metric differs from the status's first; one whose evaluation is under way, or
// that was never evaluated, is enqueued without a query — the first with the changed ones, as
// its change is unknown.
func TestBoundaryEnqueuesChangedMetricsFirst(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	five, three := 5.0, 3.0
	objects := []*v1alpha1.HorizontalAutoscaler{
		autoscalerWithMetric("steady", "shared", &five),
		autoscalerWithMetric("steady-too", "shared", &five),
		autoscalerWithMetric("changed", "moving", &three),
		autoscalerWithMetric("new", "shared", nil),
		autoscalerWithMetric("busy", "busy", &three),
		autoscalerWithMetric("failing", "missing", &three),
		autoscalerWithMetric("never-evaluated", "unseen", &three),
	}
	builder := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.HorizontalAutoscaler{})
	for _, o := range objects {
		builder = builder.WithObjects(o)
	}
	queries := &recordedQueries{values: map[string]float64{"shared": 5, "moving": 4, "busy": 9}}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 3, 0, time.UTC))
	c, err := New(Options{
		Client: builder.Build(), Config: &rest.Config{Host: "http://127.0.0.1:1"}, Mapper: meta.NewDefaultRESTMapper(nil),
		Metrics: queries, Recorder: record.NewFakeRecorder(10), Clock: clock, Period: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		if name := (types.NamespacedName{Namespace: o.Namespace, Name: o.Name}); o.Name != "never-evaluated" {
			c.busy.start(name)
			if o.Name != "busy" {
				c.busy.done(name)
			}
		}
	}
	queue := priorityqueue.New[reconcile.Request]("boundary-test")
	defer queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.enqueueAtBoundaries(ctx, queue); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the boundary's timer is set", func() (bool, string, error) {
		return clock.HasWaiters(), "no timer yet", nil
	})
	if queue.Len() != 0 {
		t.Fatalf("%d enqueued before the boundary", queue.Len())
	}
	clock.Step(7 * time.Second)
	eventually.Holds(t, "every autoscaler is enqueued at the boundary", func() (bool, string, error) {
		return queue.Len() == len(objects), fmt.Sprintf("%d of %d enqueued", queue.Len(), len(objects)), nil
	})
	got := map[string]int{}
	var order []string
	for range objects {
		request, priority, _ := queue.GetWithPriority()
		got[request.Name] = priority
		order = append(order, request.Name)
		queue.Done(request)
	}
	want := map[string]int{"changed": priorityChanged, "new": priorityChanged, "failing": priorityChanged, "busy": priorityChanged,
		"steady": priorityUnchanged, "steady-too": priorityUnchanged, "never-evaluated": priorityUnchanged}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("priorities %v, want %v", got, want)
	}
	for i, name := range order {
		if (i < 4) != (want[name] == priorityChanged) {
			t.Errorf("dequeued in the order %v, want the changed ones first", order)
			break
		}
	}
	queries.mu.Lock()
	defer queries.mu.Unlock()
	for _, asked := range queries.asked {
		if asked == "busy@12:00:10" || asked == "unseen@12:00:10" {
			t.Errorf("the query of an autoscaler being evaluated, or never evaluated, was asked at the boundary: %v", queries.asked)
		}
		if asked[len(asked)-8:] != "12:00:10" {
			t.Errorf("asked %s, want every query as of the boundary 12:00:10", asked)
		}
	}
}
