// Package gauges reads the series Karpenter exports on controller-runtime's metrics registry,
// labelled with the name and namespace of the object they describe, for tests.
package gauges

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Value is the gauge metric exports for the object key, and whether there is one.
func Value(t testing.TB, metric string, key types.NamespacedName) (float64, bool) {
	t.Helper()
	series := find(t, func(family string) bool { return family == metric }, key)
	if len(series) == 0 {
		return 0, false
	}
	return series[0].GetGauge().GetValue(), true
}

// Count is how many series of the families named prefix… are exported for the object key.
func Count(t testing.TB, prefix string, key types.NamespacedName) int {
	t.Helper()
	return len(find(t, func(family string) bool { return strings.HasPrefix(family, prefix) }, key))
}

func find(t testing.TB, family func(string) bool, key types.NamespacedName) []*dto.Metric {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics registry, %v", err)
	}
	var found []*dto.Metric
	for _, f := range families {
		if !family(f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, pair := range m.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			if labels["name"] == key.Name && labels["namespace"] == key.Namespace {
				found = append(found, m)
			}
		}
	}
	return found
}
