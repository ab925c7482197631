package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/test/eventually"
)

func TestWedgedReconcilers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running map[string]float64 // seconds, by controller
		want    string
	}{
		{name: "no controller runs (a replica that is not the leader)"},
		{name: "idle and busy controllers", running: map[string]float64{"horizontalautoscaler": 0, "metricsproducer": 42}},
		{name: "exactly at the timeout", running: map[string]float64{"metricsproducer": 300}},
		{name: "one wedged", running: map[string]float64{"horizontalautoscaler": 2, "scalablenodegroup": 301},
			want: "a reconcile has run longer than 5m0s: scalablenodegroup for 5m1s"},
		{name: "two wedged", running: map[string]float64{"metricsproducer": 3600, "horizontalautoscaler": 600},
			want: "horizontalautoscaler for 10m0s, metricsproducer for 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			registry := prometheus.NewRegistry()
			gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: longestRunningReconcile}, []string{"name", "controller"})
			registry.MustRegister(gauge)
			for name, seconds := range tc.running {
				gauge.WithLabelValues(name, name).Set(seconds)
			}
			err := wedgedReconcilers(registry, 5*time.Minute)(nil)
			if tc.want == "" && err != nil {
				t.Fatalf("check failed: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// brokenCollector yields one series twice, which fails every Gather of its registry.
type brokenCollector struct{ desc *prometheus.Desc }

func (c brokenCollector) Describe(descs chan<- *prometheus.Desc) { descs <- c.desc }
func (c brokenCollector) Collect(metrics chan<- prometheus.Metric) {
	for range 2 {
		metrics <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
	}
}

// TestWedgedReconcilersSurvivesAFamilyThatCannotBeGathered: a family the registry cannot gather
// fails the scrape of /metrics, not the liveness probe (which would restart the process for
// ever); a wedged reconcile still fails it.
func TestWedgedReconcilersSurvivesAFamilyThatCannotBeGathered(t *testing.T) {
	registry := prometheus.NewRegistry()
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: longestRunningReconcile}, []string{"name", "controller"})
	registry.MustRegister(gauge, brokenCollector{desc: prometheus.NewDesc("karpenter_broken", "Yields one series twice.", nil, nil)})
	if _, err := registry.Gather(); err == nil {
		t.Fatal("the broken collector gathers")
	}
	gauge.WithLabelValues("horizontalautoscaler", "horizontalautoscaler").Set(2)
	if err := wedgedReconcilers(registry, 5*time.Minute)(nil); err != nil {
		t.Errorf("check failed: %v", err)
	}
	gauge.WithLabelValues("metricsproducer", "metricsproducer").Set(301)
	if err := wedgedReconcilers(registry, 5*time.Minute)(nil); err == nil || !strings.Contains(err.Error(), "metricsproducer for 5m1s") {
		t.Errorf("error = %v, want the wedged metricsproducer", err)
	}
}

// TestWedgedReconcilersReadsControllerRuntimesQueues holds the check to the gauge a
// controller-runtime workqueue really exports: an item taken and never finished fails it, and
// finishing it passes again.
func TestWedgedReconcilersReadsControllerRuntimesQueues(t *testing.T) {
	// Named queues report to the provider controller-runtime installs, as its controllers' do.
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "liveness-test"})
	defer queue.ShutDown()
	queue.Add("object")
	item, _ := queue.Get()
	check := wedgedReconcilers(crmetrics.Registry, time.Millisecond)
	eventually.Holds(t, "the check fails while the item is in flight", func() (bool, string, error) {
		err := check(nil)
		return err != nil && strings.Contains(err.Error(), "liveness-test for"), "", nil
	})
	queue.Done(item)
	eventually.Holds(t, "the check passes once the item is done", func() (bool, string, error) {
		err := check(nil)
		return err == nil || !strings.Contains(err.Error(), "liveness-test"), "", nil
	})
}
