package autoscaler

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

var fuzzTargetTypes = []v1alpha1.MetricTargetType{v1alpha1.ValueMetricType, v1alpha1.AverageValueMetricType, v1alpha1.UtilizationMetricType}

// FuzzDecide checks the invariants every decision keeps, whatever the metrics, history and
// behaviour: no panic; with every metric unavailable nothing changes; otherwise the replicas
// stay within [minReplicas, maxReplicas] unless scaling is disabled at zero, and while a
// metric is unavailable nothing scales down from within bounds.
func FuzzDecide(f *testing.F) {
	f.Add(int32(1), int32(10), int32(4), int32(4), uint8(0), int64(10), 20.0, true, 1.0, false, int32(300), int32(0), int64(3), int32(5))
	f.Add(int32(0), int32(100), int32(0), int32(0), uint8(0), int64(15), 20.0, true, 0.0, false, int32(0), int32(0), int64(0), int32(0))
	f.Add(int32(2), int32(6), int32(5), int32(5), uint8(2), int64(50), 0.28, true, 0.0, false, int32(300), int32(0), int64(0), int32(0))
	f.Add(int32(1), int32(20), int32(8), int32(3), uint8(1), int64(1), 1e12, false, math.NaN(), true, int32(60), int32(60), int64(120), int32(40))
	f.Fuzz(func(t *testing.T, minReplicas, maxReplicas, specReplicas, statusReplicas int32, targetType uint8, targetValue int64,
		value float64, available bool, second float64, secondAvailable bool, downWindow, upWindow int32, historyAge int64, historyReplicas int32) {
		minReplicas = max(0, minReplicas%1000)
		maxReplicas = max(minReplicas, 1, maxReplicas%1000)
		specReplicas, statusReplicas = max(0, specReplicas%2000), max(0, statusReplicas%2000)
		downWindow, upWindow = max(0, downWindow%3600), max(0, upWindow%3600)
		target := v1alpha1.MetricTarget{Type: fuzzTargetTypes[int(targetType)%len(fuzzTargetTypes)], Value: *resource.NewQuantity(targetValue, resource.DecimalSI)}
		metric := v1alpha1.Metric{Prometheus: &v1alpha1.PrometheusMetricSource{Query: "q", Target: target}}
		observation := func(v float64, ok bool) Observation {
			if !ok {
				return Unavailable("down")
			}
			return Available(v)
		}
		now := epoch.Add(time.Hour)
		in := Input{
			Now: now,
			Spec: v1alpha1.HorizontalAutoscalerSpec{MinReplicas: &minReplicas, MaxReplicas: maxReplicas, Metrics: []v1alpha1.Metric{metric, metric},
				Behavior: v1alpha1.Behavior{ScaleUp: rules(upWindow, ""), ScaleDown: rules(downWindow, "")}},
			SpecReplicas:   specReplicas,
			StatusReplicas: statusReplicas,
			Observations:   []Observation{observation(value, available), observation(second, secondAvailable)},
			Tolerance:      DefaultTolerance,
		}
		if historyAge > 0 {
			when := now.Add(-time.Duration(historyAge%7200) * time.Second)
			in.Recommendations = recommendations(int(when.Sub(epoch).Seconds()), int(max(0, historyReplicas%2000)))
			in.ScaleEvents = events(int(when.Sub(epoch).Seconds()), int(historyReplicas%2000))
		}
		d := Decide(in)
		if d.Disabled {
			if specReplicas != 0 || minReplicas == 0 || d.DesiredReplicas != 0 {
				t.Fatalf("disabled with spec %d, minReplicas %d, desired %d", specReplicas, minReplicas, d.DesiredReplicas)
			}
			return
		}
		// A value can be unusable too (NaN, a target of zero): count what Decide could read.
		readable := 0
		for _, m := range d.Metrics {
			if m.Available {
				readable++
			}
		}
		if readable == 0 {
			// Acting on nothing it can see, the autoscaler changes nothing, bounds included.
			if d.DesiredReplicas != specReplicas {
				t.Fatalf("changed %d to %d with every metric unavailable: %s", specReplicas, d.DesiredReplicas, d.Summary())
			}
			return
		}
		if d.DesiredReplicas < minReplicas || d.DesiredReplicas > maxReplicas {
			t.Fatalf("desired %d outside [%d, %d]: %s", d.DesiredReplicas, minReplicas, maxReplicas, d.Summary())
		}
		if readable < len(d.Metrics) && specReplicas >= minReplicas && specReplicas <= maxReplicas && d.DesiredReplicas < specReplicas {
			t.Fatalf("scaled down from %d to %d with a metric unavailable: %s", specReplicas, d.DesiredReplicas, d.Summary())
		}
	})
}
