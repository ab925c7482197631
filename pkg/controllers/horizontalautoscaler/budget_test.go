package horizontalautoscaler_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// prometheusStub answers the instant queries of the Prometheus HTTP API: every query returns
// one sample of value 1, except those naming "slow", which never answer until released.
type prometheusStub struct {
	released chan struct{}

	mu          sync.Mutex
	asked       map[string]int
	inFlight    int
	maxInFlight int
}

func (p *prometheusStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/api/v1/query") {
		http.NotFound(w, r)
		return
	}
	_ = r.ParseForm()
	query := r.Form.Get("query")
	p.mu.Lock()
	p.asked[query]++
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	if strings.Contains(query, "slow") {
		select {
		case <-p.released:
		case <-r.Context().Done():
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`)
}

func (p *prometheusStub) counts(queries []string) (asked []int, maxInFlight int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range queries {
		asked = append(asked, p.asked[q])
	}
	return asked, p.maxInFlight
}

// TestSlowQueryDoesNotStarveTheOthers: 50 HorizontalAutoscalers, one of whose queries hangs
// for longer than the test; the 49 others keep being evaluated every period, and no more
// queries run at once than the controller has workers.
func TestSlowQueryDoesNotStarveTheOthers(t *testing.T) {
	// Fewer workers than autoscalers, so that the bound on queries at once shows.
	const autoscalers, workers, ns = 50, 10, "budget"
	stub := &prometheusStub{released: make(chan struct{}), asked: map[string]int{}}
	server := httptest.NewServer(stub)
	defer server.Close()
	defer close(stub.released) // before server.Close, which waits for the hanging handler
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme},
		CRDs:        []*apiextensionsv1.CustomResourceDefinition{widgetCRD},
	})
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var fast []string
	for i := range autoscalers {
		name := fmt.Sprintf("w%02d", i)
		query := fmt.Sprintf(`budget{widget=%q}`, name)
		if i == 0 {
			query = `budget{widget="slow"}`
		} else {
			fast = append(fast, query)
		}
		widget := &unstructured.Unstructured{}
		widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.karpenter.sh", Version: "v1", Kind: "Widget"})
		widget.SetNamespace(ns)
		widget.SetName(name)
		_ = unstructured.SetNestedField(widget.Object, int64(1), "spec", "replicas")
		if err := env.Client.Create(ctx, widget); err != nil {
			t.Fatal(err)
		}
		ha := horizontalAutoscaler(ns, name, v1alpha1.CrossVersionObjectReference{APIVersion: "test.karpenter.sh/v1", Kind: "Widget", Name: name},
			1, 10, v1alpha1.ValueMetricType, "1", v1alpha1.Behavior{})
		ha.Spec.Metrics[0].Prometheus.Query = query
		if err := env.Client.Create(ctx, ha); err != nil {
			t.Fatal(err)
		}
	}
	operatortest.Start(t, env, operatortest.Options{
		Namespaces: []string{ns},
		Controllers: controllers.Options{
			Enabled:       []string{horizontalautoscaler.Name},
			PrometheusURI: server.URL,
			// Longer than the test: the slow query holds its worker throughout.
			PrometheusTimeout:           10 * time.Minute,
			HorizontalAutoscalerPeriod:  period,
			HorizontalAutoscalerWorkers: workers,
		},
	})

	// Three evaluations each, a period apart, while the slow query is still unanswered.
	eventually.Holds(t, "every other autoscaler is evaluated at least three times", func() (bool, string, error) {
		asked, _ := stub.counts(fast)
		least := asked[0]
		for _, n := range asked {
			least = min(least, n)
		}
		slow, _ := stub.counts([]string{`budget{widget="slow"}`})
		return least >= 3 && slow[0] == 1, fmt.Sprintf("the least evaluated was asked %d times, the slow one %d", least, slow[0]), nil
	}, eventually.Timeout(2*time.Minute))
	if _, maxInFlight := stub.counts(nil); maxInFlight > workers {
		t.Errorf("%d queries ran at once, more than the %d workers", maxInFlight, workers)
	}
}
