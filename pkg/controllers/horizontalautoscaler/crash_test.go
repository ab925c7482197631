package horizontalautoscaler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/test/environment"
)

// fault is what an injected failure does to one write.
type fault int

const (
	// lost: the write never reaches the API server, as when the process stops before it.
	lost fault = iota + 1
	// appliedButFailed: the API server applies the write, the caller sees an error, as after
	// a timeout on the response.
	appliedButFailed
)

var errInjected = errors.New("injected failure")

// faults fails chosen writes of one evaluation: the nth status patch, or the scale update.
type faults struct {
	mu          sync.Mutex
	statusPatch map[int]fault // by the 1-based count of status patches
	scaleUpdate fault
	patches     int
}

func (f *faults) nextPatch() fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patches++
	return f.statusPatch[f.patches]
}

func (f *faults) scale() fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scaleUpdate
}

// faultyClient injects the status patch faults.
type faultyClient struct {
	client.Client
	faults *faults
}

func (c faultyClient) Status() client.SubResourceWriter {
	return faultyStatus{SubResourceWriter: c.Client.Status(), faults: c.faults}
}

type faultyStatus struct {
	client.SubResourceWriter
	faults *faults
}

func (s faultyStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	switch s.faults.nextPatch() {
	case lost:
		return fmt.Errorf("status patch, %w", errInjected)
	case appliedButFailed:
		if err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...); err != nil {
			return err
		}
		return fmt.Errorf("status patch applied, then %w", errInjected)
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// faultyScales injects the scale update faults at the HTTP layer, where the scale client's
// requests go.
type faultyScales struct {
	next   http.RoundTripper
	faults *faults
}

func (t faultyScales) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || !strings.HasSuffix(req.URL.Path, "/scale") {
		return t.next.RoundTrip(req)
	}
	switch t.faults.scale() {
	case lost:
		return nil, fmt.Errorf("scale update, %w", errInjected)
	case appliedButFailed:
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
		return nil, fmt.Errorf("scale update applied, then %w", errInjected)
	}
	return t.next.RoundTrip(req)
}

type constantMetric float64

func (m constantMetric) QueryAt(context.Context, string, time.Time) (float64, error) {
	return float64(m), nil
}

// TestNoDoubleStepAfterAFailureBetweenTheWrites injects a failure at each point of an
// evaluation that scales — before, between and after the scale write and the status write —
// and shows that the evaluation after it, within the same policy period, does exactly what
// the rate policy allows: no second step when the first was made, no lost step when it was not.
func TestNoDoubleStepAfterAFailureBetweenTheWrites(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme},
		CRDs:        []*apiextensionsv1.CustomResourceDefinition{widgetCRD},
	})
	ctx := context.Background()
	const ns = "crash"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name        string
		statusPatch map[int]fault
		scaleUpdate fault
		// afterFailure is the target's spec replicas after the evaluation that failed.
		afterFailure int32
	}{
		{name: "no failure", afterFailure: 20},
		{name: "the pending scale is never recorded", statusPatch: map[int]fault{1: lost}, afterFailure: 10},
		{name: "the pending scale is recorded, the response lost", statusPatch: map[int]fault{1: appliedButFailed}, afterFailure: 10},
		{name: "the scale write never arrives (the process stops after recording it)", scaleUpdate: lost, afterFailure: 10},
		{name: "the scale write is made, the response lost", scaleUpdate: appliedButFailed, afterFailure: 20},
		{name: "the status write after the scale fails (the process stops after scaling)", statusPatch: map[int]fault{2: lost}, afterFailure: 20},
		{name: "the status write after the scale is made, the response lost", statusPatch: map[int]fault{2: appliedButFailed}, afterFailure: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("case-%d", i)
			widget := createWidget(t, env, ns, name, 10)
			// The metric asks for 100; scale-up doubles at most once per 15s.
			ha := horizontalAutoscaler(ns, name, v1alpha1.CrossVersionObjectReference{APIVersion: "test.karpenter.sh/v1", Kind: "Widget", Name: name},
				1, 100, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{
					ScaleUp: scalingRules(0, v1alpha1.ScalingPolicy{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}),
				})
			if err := env.Client.Create(ctx, ha); err != nil {
				t.Fatal(err)
			}

			injected := &faults{}
			clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
			config := rest.CopyConfig(env.Config)
			config.Wrap(func(next http.RoundTripper) http.RoundTripper { return faultyScales{next: next, faults: injected} })
			controller, err := horizontalautoscaler.New(horizontalautoscaler.Options{
				Client: faultyClient{Client: env.Client, faults: injected}, Config: config, Mapper: env.Client.RESTMapper(),
				Metrics: constantMetric(100), Recorder: record.NewFakeRecorder(100), Clock: clock,
			})
			if err != nil {
				t.Fatal(err)
			}
			evaluate := func() error {
				_, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ha)})
				return err
			}

			injected.mu.Lock()
			injected.statusPatch, injected.scaleUpdate = tc.statusPatch, tc.scaleUpdate
			injected.mu.Unlock()
			err = evaluate()
			if (tc.statusPatch != nil || tc.scaleUpdate != 0) != errors.Is(err, errInjected) {
				t.Fatalf("the evaluation with the failure returned %v", err)
			}
			if got := widgetReplicas(t, env, widget); got != tc.afterFailure {
				t.Fatalf("spec.replicas %d after the evaluation with the failure, want %d", got, tc.afterFailure)
			}

			injected.mu.Lock()
			injected.statusPatch, injected.scaleUpdate = nil, 0
			injected.mu.Unlock()
			// A second later, inside the period: the policy allows twice the replicas at its
			// start, 10, so 20 whether or not the failed evaluation made its step.
			clock.Step(time.Second)
			if err := evaluate(); err != nil {
				t.Fatal(err)
			}
			if got := widgetReplicas(t, env, widget); got != 20 {
				t.Errorf("spec.replicas %d a second after the failure, want the 20 the policy allows", got)
			}
			status := getHA(t, env, ha).Status
			if status.PendingScale != nil || len(status.ScaleEvents) != 1 || status.ScaleEvents[0].ReplicaChange != 10 || status.LastScaleTime == nil {
				t.Errorf("status: pendingScale %+v, scaleEvents %+v, lastScaleTime %v; want none, one +10, a time",
					status.PendingScale, status.ScaleEvents, status.LastScaleTime)
			}

			// Once the period is over, the next step is allowed.
			clock.Step(16 * time.Second)
			if err := evaluate(); err != nil {
				t.Fatal(err)
			}
			if got := widgetReplicas(t, env, widget); got != 40 {
				t.Errorf("spec.replicas %d once the period is over, want 40", got)
			}
		})
	}
}

func createWidget(t *testing.T, env *environment.Environment, namespace, name string, replicas int64) *unstructured.Unstructured {
	t.Helper()
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.karpenter.sh", Version: "v1", Kind: "Widget"})
	widget.SetNamespace(namespace)
	widget.SetName(name)
	_ = unstructured.SetNestedField(widget.Object, replicas, "spec", "replicas")
	if err := env.Client.Create(context.Background(), widget); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(widget.Object, replicas, "status", "replicas")
	if err := env.Client.Status().Update(context.Background(), widget); err != nil {
		t.Fatal(err)
	}
	return widget
}

func widgetReplicas(t *testing.T, env *environment.Environment, widget *unstructured.Unstructured) int32 {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(widget), widget); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(widget.Object, "spec", "replicas")
	return int32(replicas)
}

func getHA(t *testing.T, env *environment.Environment, ha *v1alpha1.HorizontalAutoscaler) *v1alpha1.HorizontalAutoscaler {
	t.Helper()
	got := &v1alpha1.HorizontalAutoscaler{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ha), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// staleClient answers reads of HorizontalAutoscalers with a copy taken earlier, as a cache that
// has not seen the latest write yet.
type staleClient struct {
	client.Client
	stale *v1alpha1.HorizontalAutoscaler
}

func (c staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if ha, ok := obj.(*v1alpha1.HorizontalAutoscaler); ok && c.stale != nil {
		c.stale.DeepCopyInto(ha)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestStaleReadNeverScalesTwice: an evaluation that reads a HorizontalAutoscaler older than the
// last status write (the cache lagging) scales nothing and writes nothing; the evaluation after
// it, on fresh state, does what the rate policy allows.
func TestStaleReadNeverScalesTwice(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme},
		CRDs:        []*apiextensionsv1.CustomResourceDefinition{widgetCRD},
	})
	ctx := context.Background()
	const ns, name = "stale", "stale"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	widget := createWidget(t, env, ns, name, 10)
	// The metric asks for 100; scale-up doubles at most once per 15s.
	ha := horizontalAutoscaler(ns, name, v1alpha1.CrossVersionObjectReference{APIVersion: "test.karpenter.sh/v1", Kind: "Widget", Name: name},
		1, 100, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{
			ScaleUp: scalingRules(0, v1alpha1.ScalingPolicy{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}),
		})
	if err := env.Client.Create(ctx, ha); err != nil {
		t.Fatal(err)
	}
	reads := &staleClient{Client: env.Client}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	controller, err := horizontalautoscaler.New(horizontalautoscaler.Options{
		Client: reads, Config: env.Config, Mapper: env.Client.RESTMapper(),
		Metrics: constantMetric(100), Recorder: record.NewFakeRecorder(100), Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	evaluate := func() (reconcile.Result, error) {
		return controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ha)})
	}
	before := getHA(t, env, ha)
	if _, err := evaluate(); err != nil {
		t.Fatal(err)
	}
	if got := widgetReplicas(t, env, widget); got != 20 {
		t.Fatalf("spec.replicas %d after the first evaluation, want 20", got)
	}
	written := getHA(t, env, ha)

	// A second later the cache still holds the object as it was before the first evaluation,
	// without its scale event: the policy would seem to allow 40.
	reads.stale = before
	clock.Step(time.Second)
	result, err := evaluate()
	if err != nil || !result.Requeue { //nolint:staticcheck // SA1019: Requeue is what the controller returns.
		t.Fatalf("the evaluation on a stale read returned %+v, %v; want a requeue", result, err)
	}
	if got := widgetReplicas(t, env, widget); got != 20 {
		t.Errorf("spec.replicas %d after an evaluation on a stale read, want still 20", got)
	}
	if after := getHA(t, env, ha); after.ResourceVersion != written.ResourceVersion {
		t.Errorf("the status was written on a stale read: %+v", after.Status)
	}

	// Fresh again: still inside the policy period, 20 stays.
	reads.stale = nil
	if _, err := evaluate(); err != nil {
		t.Fatal(err)
	}
	if got := widgetReplicas(t, env, widget); got != 20 {
		t.Errorf("spec.replicas %d inside the policy period, want the 20 it allows", got)
	}
}
