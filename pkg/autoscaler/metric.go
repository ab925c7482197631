package autoscaler

import (
	"fmt"
	"math"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// Observation is one metric as read from its source: a value, or the reason it is unavailable.
type Observation struct {
	Value float64
	// Unavailable says why the value could not be read; empty when Value is valid.
	Unavailable string
}

// Available reports whether the observation carries a usable value.
func (o Observation) Available() bool { return o.Unavailable == "" }

// Available returns an observation of value.
func Available(value float64) Observation { return Observation{Value: value} }

// Unavailable returns an observation that could not be read, and why.
func Unavailable(reason string) Observation { return Observation{Unavailable: reason} }

// MetricRecommendation is what one metric asks for, and how it got there.
type MetricRecommendation struct {
	// Replicas is meaningful only when Available.
	Replicas  int32
	Available bool
	// Reason explains the recommendation, or why there is none.
	Reason string
}

// ceilingSlack absorbs floating point noise so that, e.g., 5 × 1.2 recommends 6, not 7, and a
// ratio of 11/10 counts as within a 10% tolerance.
const ceilingSlack = 1e-9

// tolerances are the bands around a target within which a metric does not scale, for a
// ratio above the target (up) and below it (down).
type tolerances struct{ up, down float64 }

// recommend computes one metric's replica recommendation. observed is the number of replicas
// the metric reflects (the target's status); unchanged is what "leave it alone" means (the
// target's spec), returned when the metric is within the tolerance band.
func recommend(target v1alpha1.MetricTarget, o Observation, observed, unchanged int32, bands tolerances) MetricRecommendation {
	if !o.Available() {
		return MetricRecommendation{Reason: o.Unavailable}
	}
	goal := target.Value.AsApproximateFloat64()
	if goal <= 0 || math.IsNaN(goal) || math.IsInf(goal, 0) {
		return MetricRecommendation{Reason: fmt.Sprintf("target value %s must be positive", target.Value.String())}
	}
	value := o.Value
	current := float64(observed)
	var raw, ratio float64
	switch target.Type {
	case v1alpha1.ValueMetricType:
		ratio = value / goal
		raw = current * ratio
	case v1alpha1.UtilizationMetricType:
		// The value is a 0–1 ratio, the target a percentage.
		ratio = value * 100 / goal
		raw = current * ratio
	case v1alpha1.AverageValueMetricType:
		raw = value / goal
		if observed > 0 {
			ratio = raw / current
		}
	default:
		return MetricRecommendation{Reason: fmt.Sprintf("unknown target type %q", target.Type)}
	}
	describe := fmt.Sprintf("%s %s against %s target %s with %s", formatValue(value), unitOf(target.Type), target.Type, target.Value.String(), Replicas(observed))
	tolerance := bands.down
	if ratio > 1 {
		tolerance = bands.up
	}
	if observed > 0 && math.Abs(ratio-1) <= tolerance+ceilingSlack {
		return MetricRecommendation{Replicas: unchanged, Available: true,
			Reason: fmt.Sprintf("%s: ratio %.3f is within the %.0f%% tolerance, recommends no change (%d)", describe, ratio, tolerance*100, unchanged)}
	}
	replicas := ceilReplicas(raw)
	if observed == 0 && unchanged == 0 && target.Type == v1alpha1.ValueMetricType {
		// As the HorizontalPodAutoscaler's replica calculator: from zero replicas a Value
		// target asks for the replicas that bring the value to the target, at least one while
		// there is demand.
		replicas = ceilReplicas(ratio)
		if value > 0 {
			replicas = max(replicas, 1)
			return MetricRecommendation{Replicas: replicas, Available: true, Reason: fmt.Sprintf("%s: scales from zero to %d", describe, replicas)}
		}
	}
	if observed == 0 && value > 0 && replicas < 1 {
		// Nothing runs, yet there is demand: start one replica (or keep the ones already
		// asked for and still starting) and measure again.
		replicas = max(1, unchanged)
		return MetricRecommendation{Replicas: replicas, Available: true, Reason: fmt.Sprintf("%s: scales from zero to %d", describe, replicas)}
	}
	if target.Type != v1alpha1.AverageValueMetricType && observed < unchanged {
		// The ratio describes the replicas running, not those asked for and still starting:
		// demand above target must not shrink the request, nor demand below it grow it.
		if ratio > 1 {
			replicas = max(replicas, unchanged)
		} else {
			replicas = min(replicas, unchanged)
		}
	}
	return MetricRecommendation{Replicas: replicas, Available: true, Reason: fmt.Sprintf("%s: recommends %d", describe, replicas)}
}

func unitOf(t v1alpha1.MetricTargetType) string {
	if t == v1alpha1.UtilizationMetricType {
		return "utilization"
	}
	return "value"
}

func formatValue(v float64) string {
	return fmt.Sprintf("%g", v)
}

// ceilReplicas rounds a replica count up into [0, MaxInt32].
func ceilReplicas(x float64) int32 {
	if math.IsNaN(x) || x <= 0 {
		return 0
	}
	c := math.Ceil(x - ceilingSlack*math.Max(1, x))
	if c >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(c)
}
