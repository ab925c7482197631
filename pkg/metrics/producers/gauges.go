package producers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Labels of every producer gauge: the MetricsProducer's name and namespace.
const (
	LabelName      = "name"
	LabelNamespace = "namespace"
)

// gauges lists every gauge of every kind, so that Export and Delete reach them all.
var gauges = func() []*prometheus.GaugeVec {
	var all []*prometheus.GaugeVec
	for _, k := range kinds {
		all = append(all, k.gauges...)
	}
	return all
}()

func init() {
	for _, g := range gauges {
		metrics.Registry.MustRegister(g)
	}
}

func newGauge(subsystem, name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: subsystem, Name: name, Help: help,
	}, []string{LabelName, LabelNamespace})
}

// Sample is one value for one gauge of a MetricsProducer.
type Sample struct {
	Gauge *prometheus.GaugeVec
	Value float64
}

// Export makes the samples the only series of the MetricsProducer key: it sets each and
// removes every other series the producer had, e.g. those of a kind it no longer has.
func Export(key types.NamespacedName, samples []Sample) {
	labels := prometheus.Labels{LabelName: key.Name, LabelNamespace: key.Namespace}
	set := map[*prometheus.GaugeVec]bool{}
	for _, s := range samples {
		s.Gauge.With(labels).Set(s.Value)
		set[s.Gauge] = true
	}
	for _, g := range gauges {
		if !set[g] {
			g.Delete(labels)
		}
	}
}

// Delete removes every series of the MetricsProducer key.
func Delete(key types.NamespacedName) {
	Export(key, nil)
}
