package operator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// DefaultWedgedReconcileTimeout is how long one reconcile may run before the liveness probe
// fails when Options.WedgedReconcileTimeout is zero. Every call a reconcile makes has its own
// deadline (Prometheus queries, AWS calls, the API server's), so a reconcile running this
// long is stuck, not slow.
const DefaultWedgedReconcileTimeout = 5 * time.Minute

// longestRunningReconcile is controller-runtime's workqueue gauge: per controller, how long
// its longest reconcile in flight has been running.
const longestRunningReconcile = "workqueue_longest_running_processor_seconds"

// wedgedReconcilers fails when a controller's reconcile has run for longer than timeout: a
// reconciler blocked forever holds its worker and its object, and a liveness failure restarts
// the process, which also withdraws every gauge it would otherwise keep serving unrefreshed.
// Only a wedged reconcile fails it: a family that cannot be gathered (which fails the scrape of
// /metrics, where it shows) is left out of what Gather returns, and restarting the process for
// it would restart it forever.
func wedgedReconcilers(gatherer prometheus.Gatherer, timeout time.Duration) healthz.Checker {
	return func(*http.Request) error {
		families, _ := gatherer.Gather() //nolint:errcheck // what could be gathered is read; see above.
		var wedged []string
		for _, family := range families {
			if family.GetName() != longestRunningReconcile {
				continue
			}
			for _, metric := range family.GetMetric() {
				running := time.Duration(metric.GetGauge().GetValue() * float64(time.Second))
				if running <= timeout {
					continue
				}
				name := "unknown"
				for _, label := range metric.GetLabel() {
					if label.GetName() == "name" {
						name = label.GetValue()
					}
				}
				wedged = append(wedged, fmt.Sprintf("%s for %s", name, running.Round(time.Second)))
			}
		}
		if len(wedged) > 0 {
			slices.Sort(wedged)
			return fmt.Errorf("a reconcile has run longer than %s: %s", timeout, strings.Join(wedged, ", "))
		}
		return nil
	}
}
