package autoscaler

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

func target(t v1alpha1.MetricTargetType, value string) v1alpha1.MetricTarget {
	return v1alpha1.MetricTarget{Type: t, Value: resource.MustParse(value)}
}

func TestRecommend(t *testing.T) {
	const (
		value       = v1alpha1.ValueMetricType
		average     = v1alpha1.AverageValueMetricType
		utilization = v1alpha1.UtilizationMetricType
	)
	for _, tc := range []struct {
		name              string
		target            v1alpha1.MetricTarget
		observation       Observation
		status, spec      int32
		want              int32
		wantUnavailable   bool
		wantReasonContain string
		bands             *tolerances
	}{
		{name: "Value scales by the ratio", target: target(value, "10"), observation: Available(12), status: 5, spec: 5, want: 6},
		{name: "Value rounds up", target: target(value, "10"), observation: Available(5), status: 5, spec: 5, want: 3},
		{name: "Value doubles", target: target(value, "10"), observation: Available(20), status: 5, spec: 5, want: 10},
		{name: "Value ignores floating point noise", target: target(value, "1"), observation: Available(1.2), status: 5, spec: 5, want: 6},
		{name: "Value of zero goes to zero", target: target(value, "10"), observation: Available(0), status: 5, spec: 5, want: 0},
		{name: "Value negative goes to zero", target: target(value, "10"), observation: Available(-3), status: 5, spec: 5, want: 0},
		{name: "Value within tolerance keeps the spec", target: target(value, "10"), observation: Available(10.9), status: 5, spec: 5, want: 5, wantReasonContain: "tolerance"},
		{name: "Value at the tolerance edge keeps the spec", target: target(value, "10"), observation: Available(11), status: 5, spec: 5, want: 5},
		{name: "Value just outside tolerance scales", target: target(value, "10"), observation: Available(11.1), status: 10, spec: 10, want: 12},
		{name: "Value below tolerance scales down", target: target(value, "10"), observation: Available(8.9), status: 10, spec: 10, want: 9},
		{name: "Value uses status replicas for the ratio", target: target(value, "10"), observation: Available(20), status: 3, spec: 5, want: 6},
		{name: "tolerance keeps the spec, not the status", target: target(value, "10"), observation: Available(10), status: 3, spec: 5, want: 5},
		{name: "Value above target never shrinks a request still starting", target: target(value, "10"), observation: Available(15), status: 5, spec: 10, want: 10},
		{name: "Value below target never grows a request still starting", target: target(value, "10"), observation: Available(5), status: 5, spec: 10, want: 3},
		{name: "Value keeps replicas still starting from zero", target: target(value, "10"), observation: Available(1000), status: 0, spec: 5, want: 5, wantReasonContain: "from zero to 5"},
		{name: "Utilization above target never shrinks a request still starting", target: target(utilization, "50"), observation: Available(0.8), status: 2, spec: 6, want: 6},
		{name: "AverageValue with no scale-up tolerance adds one node to twenty", target: target(average, "1"), observation: Available(21), status: 20, spec: 20, want: 21, bands: &tolerances{up: 0, down: 0.1}},
		{name: "AverageValue scale-down tolerance still holds", target: target(average, "1"), observation: Available(19), status: 20, spec: 20, want: 20, bands: &tolerances{up: 0, down: 0.1}},
		{name: "wide scale-down tolerance holds a large drop", target: target(value, "10"), observation: Available(5), status: 10, spec: 10, want: 10, bands: &tolerances{up: 0.1, down: 0.6}},
		{name: "Value scales from zero", target: target(value, "10"), observation: Available(3), status: 0, spec: 0, want: 1, wantReasonContain: "from zero"},
		{name: "Value stays at zero without demand", target: target(value, "10"), observation: Available(0), status: 0, spec: 0, want: 0},
		{name: "Value with milli target", target: target(value, "500m"), observation: Available(1), status: 2, spec: 2, want: 4},
		{name: "AverageValue divides", target: target(average, "10"), observation: Available(95), status: 3, spec: 3, want: 10},
		{name: "AverageValue goes to zero", target: target(average, "10"), observation: Available(0), status: 3, spec: 3, want: 0},
		{name: "AverageValue within tolerance keeps the spec", target: target(average, "10"), observation: Available(52), status: 5, spec: 5, want: 5},
		{name: "AverageValue outside tolerance", target: target(average, "10"), observation: Available(61), status: 5, spec: 5, want: 7},
		{name: "AverageValue from zero", target: target(average, "10"), observation: Available(25), status: 0, spec: 0, want: 3},
		{name: "AverageValue huge value saturates", target: target(average, "1m"), observation: Available(1e12), status: 1, spec: 1, want: 2147483647},
		{name: "Utilization as a percentage", target: target(utilization, "60"), observation: Available(0.9), status: 4, spec: 4, want: 6},
		{name: "Utilization scales down", target: target(utilization, "80"), observation: Available(0.2), status: 8, spec: 8, want: 2},
		{name: "Utilization within tolerance", target: target(utilization, "50"), observation: Available(0.52), status: 4, spec: 4, want: 4},
		{name: "Utilization from zero", target: target(utilization, "50"), observation: Available(0.1), status: 0, spec: 0, want: 1},
		{name: "unavailable observation", target: target(value, "10"), observation: Unavailable("query returned no samples"), status: 4, spec: 4, wantUnavailable: true, wantReasonContain: "no samples"},
		{name: "zero target is unavailable", target: target(value, "0"), observation: Available(3), status: 4, spec: 4, wantUnavailable: true, wantReasonContain: "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bands := tolerances{up: DefaultTolerance, down: DefaultTolerance}
			if tc.bands != nil {
				bands = *tc.bands
			}
			got := recommend(tc.target, tc.observation, tc.status, tc.spec, bands)
			if got.Available == tc.wantUnavailable {
				t.Fatalf("available = %v, want %v (%s)", got.Available, !tc.wantUnavailable, got.Reason)
			}
			if !tc.wantUnavailable && got.Replicas != tc.want {
				t.Errorf("replicas = %d, want %d (%s)", got.Replicas, tc.want, got.Reason)
			}
			if !strings.Contains(got.Reason, tc.wantReasonContain) {
				t.Errorf("reason %q does not contain %q", got.Reason, tc.wantReasonContain)
			}
		})
	}
}

func TestRecommendToleranceIsConfigurable(t *testing.T) {
	got := recommend(target(v1alpha1.ValueMetricType, "10"), Available(13), 10, 10, tolerances{up: 0.5, down: 0.5})
	if got.Replicas != 10 {
		t.Errorf("with 50%% tolerance, ratio 1.3 recommends %d, want 10", got.Replicas)
	}
	got = recommend(target(v1alpha1.ValueMetricType, "10"), Available(10.1), 10, 10, tolerances{})
	if got.Replicas != 11 {
		t.Errorf("with no tolerance, ratio 1.01 recommends %d, want 11", got.Replicas)
	}
}
