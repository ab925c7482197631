// Package counters reads the counters and histograms Karpenter exports on controller-runtime's
// metrics registry, for tests.
package counters

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Value is the sum, over the family's series whose labels include labels, of a counter's value
// or a histogram's sample count; 0 when no series matches.
func Value(t testing.TB, family string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics registry, %v", err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, pair := range m.GetLabel() {
				have[pair.GetName()] = pair.GetValue()
			}
			if !includes(have, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func includes(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Mark is a family's value for some labels at a moment: the registry is the process's, so a test
// run again (-count) or beside others reads how much a value grew since its mark.
type Mark struct {
	t      testing.TB
	family string
	labels map[string]string
	value  float64
}

// MarkNow marks the family's value for labels now (Value).
func MarkNow(t testing.TB, family string, labels map[string]string) Mark {
	t.Helper()
	return Mark{t: t, family: family, labels: labels, value: Value(t, family, labels)}
}

// Increase is how much the value grew since the mark.
func (m Mark) Increase() float64 {
	m.t.Helper()
	return Value(m.t, m.family, m.labels) - m.value
}
