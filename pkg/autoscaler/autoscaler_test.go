package autoscaler

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

var epoch = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return epoch.Add(time.Duration(seconds) * time.Second) }

func valueMetric(targetValue string) v1alpha1.Metric {
	return v1alpha1.Metric{Prometheus: &v1alpha1.PrometheusMetricSource{Query: "q", Target: target(v1alpha1.ValueMetricType, targetValue)}}
}

func averageMetric(targetValue string) v1alpha1.Metric {
	return v1alpha1.Metric{Prometheus: &v1alpha1.PrometheusMetricSource{Query: "q", Target: target(v1alpha1.AverageValueMetricType, targetValue)}}
}

func utilizationMetric(targetValue string) v1alpha1.Metric {
	return v1alpha1.Metric{Prometheus: &v1alpha1.PrometheusMetricSource{Query: "q", Target: target(v1alpha1.UtilizationMetricType, targetValue)}}
}

func spec(minReplicas, maxReplicas int32, behavior v1alpha1.Behavior, metrics ...v1alpha1.Metric) v1alpha1.HorizontalAutoscalerSpec {
	return v1alpha1.HorizontalAutoscalerSpec{MinReplicas: ptr.To(minReplicas), MaxReplicas: maxReplicas, Metrics: metrics, Behavior: behavior}
}

func rules(window int32, selectPolicy v1alpha1.ScalingPolicySelect, policies ...v1alpha1.ScalingPolicy) *v1alpha1.ScalingRules {
	r := &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To(window), Policies: policies}
	if selectPolicy != "" {
		r.SelectPolicy = ptr.To(selectPolicy)
	}
	return r
}

func count(value, periodSeconds int32) v1alpha1.ScalingPolicy {
	return v1alpha1.ScalingPolicy{Type: v1alpha1.CountScalingPolicy, Value: value, PeriodSeconds: periodSeconds}
}

func percent(value, periodSeconds int32) v1alpha1.ScalingPolicy {
	return v1alpha1.ScalingPolicy{Type: v1alpha1.PercentScalingPolicy, Value: value, PeriodSeconds: periodSeconds}
}

// unlimited lets both directions move freely, so a test isolates one rule.
var unlimited = v1alpha1.Behavior{
	ScaleUp:   rules(0, "", count(1000, 1)),
	ScaleDown: rules(0, "", count(1000, 1)),
}

func recommendations(pairs ...int) []v1alpha1.Recommendation {
	var out []v1alpha1.Recommendation
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, v1alpha1.Recommendation{Time: metav1.NewTime(at(pairs[i])), Replicas: int32(pairs[i+1])})
	}
	return out
}

func events(pairs ...int) []v1alpha1.ScaleEvent {
	var out []v1alpha1.ScaleEvent
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, v1alpha1.ScaleEvent{Time: metav1.NewTime(at(pairs[i])), ReplicaChange: int32(pairs[i+1])})
	}
	return out
}

func holdReasons(d Decision) []string {
	var reasons []string
	for _, h := range d.Holds {
		reasons = append(reasons, h.Reason)
	}
	return reasons
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            Input
		want          int32
		wantHolds     []string
		wantHoldUntil time.Time
		wantMessage   string
		wantClamp     string
	}{
		{
			name: "the largest recommendation wins",
			in: Input{Spec: spec(1, 100000, unlimited, valueMetric("10"), valueMetric("10"), averageMetric("5")),
				SpecReplicas: 4, StatusReplicas: 4, Observations: []Observation{Available(20), Available(30), Available(20)}},
			want: 12,
		},
		{
			name: "a behavior's tolerance replaces the controller's",
			in: Input{Spec: spec(1, 100, v1alpha1.Behavior{
				ScaleUp:   &v1alpha1.ScalingRules{Tolerance: ptr.To(resource.MustParse("0")), Policies: unlimited.ScaleUp.Policies},
				ScaleDown: unlimited.ScaleDown,
			}, averageMetric("1")),
				SpecReplicas: 20, StatusReplicas: 20, Observations: []Observation{Available(21)}, Tolerance: DefaultTolerance},
			want: 21,
		},
		{
			name: "unavailable metric does not block a scale-up",
			in: Input{Spec: spec(1, 100000, unlimited, valueMetric("10"), valueMetric("10")),
				SpecReplicas: 4, StatusReplicas: 4, Observations: []Observation{Unavailable("timeout"), Available(20)}},
			want: 8,
		},
		{
			name: "unavailable metric suspends a scale-down",
			in: Input{Spec: spec(1, 100000, unlimited, valueMetric("10"), valueMetric("10")),
				SpecReplicas: 4, StatusReplicas: 4, Observations: []Observation{Unavailable("timeout"), Available(1)}},
			want: 4, wantHolds: []string{ScaleDownSuspended}, wantMessage: "1 of 2 metrics are unavailable",
		},
		{
			name: "all metrics unavailable changes nothing, not even the bounds",
			in: Input{Spec: spec(1, 3, unlimited, valueMetric("10"), valueMetric("10")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Unavailable("timeout"), Unavailable("NaN")}},
			want: 5, wantHolds: []string{ScalingSuspended},
		},
		{
			name: "one replica held by a missing metric is one replica",
			in: Input{Spec: spec(0, 10, unlimited, valueMetric("10"), valueMetric("10")),
				SpecReplicas: 1, StatusReplicas: 1, Observations: []Observation{Unavailable("timeout"), Available(0)}},
			want: 1, wantHolds: []string{ScaleDownSuspended}, wantMessage: "so the target stays at 1 replica instead of 0",
		},
		{
			name: "one replica held by no metric is one replica",
			in:   Input{Spec: spec(1, 10, unlimited, valueMetric("10")), SpecReplicas: 1, StatusReplicas: 1},
			want: 1, wantHolds: []string{ScalingSuspended}, wantMessage: "no metric is available, so the target stays at 1 replica",
		},
		{
			name: "missing observations count as unavailable",
			in:   Input{Spec: spec(1, 10, unlimited, valueMetric("10")), SpecReplicas: 5, StatusReplicas: 5},
			want: 5, wantHolds: []string{ScalingSuspended},
		},
		{
			name: "without metrics only the bounds apply",
			in:   Input{Spec: spec(2, 10, unlimited), SpecReplicas: 1, StatusReplicas: 1},
			want: 2, wantClamp: TooFewReplicas,
		},
		{
			name: "clamped to maxReplicas, the message gives the raw recommendation",
			in: Input{Spec: spec(1, 10, unlimited, valueMetric("10")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(30)}},
			want: 10, wantClamp: TooManyReplicas, wantMessage: "recommendation of 15 replicas is clamped to maxReplicas 10",
		},
		{
			name: "clamped to minReplicas",
			in: Input{Spec: spec(3, 10, unlimited, valueMetric("10")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(1)}},
			want: 3, wantClamp: TooFewReplicas, wantMessage: "clamped to minReplicas 3",
		},
		{
			name: "minReplicas 0 allows scaling to zero",
			in: Input{Spec: spec(0, 10, unlimited, averageMetric("10")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(0)}},
			want: 0,
		},
		{
			name: "unset minReplicas is 1",
			in: Input{Spec: v1alpha1.HorizontalAutoscalerSpec{MaxReplicas: 10, Metrics: []v1alpha1.Metric{averageMetric("10")}, Behavior: unlimited},
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(0)}},
			want: 1, wantClamp: TooFewReplicas,
		},
		{
			name: "scale from zero with the default policies: ceil(value/target), at most 4 per 15s",
			in: Input{Spec: spec(0, 10, v1alpha1.Behavior{}, valueMetric("10")),
				SpecReplicas: 0, StatusReplicas: 0, Observations: []Observation{Available(50)}},
			want: 4, wantHolds: []string{ScaleUpLimited},
		},
		{
			// The HPA's TestScaleUpFromZeroCMObject.
			name: "scale from zero with a Value target recommends ceil(value/target)",
			in: Input{Spec: spec(0, 10, v1alpha1.Behavior{}, valueMetric("15")),
				SpecReplicas: 0, StatusReplicas: 0, Observations: []Observation{Available(20)}},
			want: 2,
		},
		{
			name: "a target at zero with minReplicas above zero is disabled",
			in: Input{Spec: spec(2, 10, v1alpha1.Behavior{}, valueMetric("10")),
				SpecReplicas: 0, StatusReplicas: 0, Observations: []Observation{Available(50)}},
			want: 0,
		},
		{
			// The HPA's TestScaleDownStabilizeInitialSize: CPU 28% of a 50% target.
			name: "a new autoscaler's scale-down window counts the current replicas",
			in: Input{Spec: spec(2, 6, v1alpha1.Behavior{}, utilizationMetric("50")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(0.28)}},
			want: 5, wantHolds: []string{ScaleDownStabilized},
		},
		{
			name: "a new autoscaler with no scale-down window scales down at once",
			in: Input{Spec: spec(2, 6, v1alpha1.Behavior{ScaleDown: rules(0, "")}, utilizationMetric("50")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(0.28)}},
			want: 3,
		},
		{
			name: "a new autoscaler with no scale-up window scales up at once",
			in: Input{Now: epoch.Add(1500 * time.Millisecond), Spec: spec(1, 10, v1alpha1.Behavior{}, valueMetric("10")),
				SpecReplicas: 2, StatusReplicas: 2, Observations: []Observation{Available(30)}},
			want: 6,
		},
		{
			name: "scale from zero with a Percent-only policy still starts one replica",
			in: Input{Spec: spec(0, 10, v1alpha1.Behavior{ScaleUp: rules(0, "", percent(100, 60))}, averageMetric("1")),
				SpecReplicas: 0, StatusReplicas: 0, Observations: []Observation{Available(50)}},
			want: 1, wantHolds: []string{ScaleUpLimited}, wantClamp: TooManyReplicas, wantMessage: "recommendation of 50 replicas is above maxReplicas 10",
		},
		{
			name: "default scale-down window holds the highest recent recommendation",
			in: Input{Now: at(200), Spec: spec(1, 20, v1alpha1.Behavior{}, valueMetric("10")),
				SpecReplicas: 8, StatusReplicas: 8, Observations: []Observation{Available(5)},
				Recommendations: recommendations(0, 10, 100, 7, 190, 6)},
			want: 8, wantHolds: []string{ScaleDownStabilized}, wantHoldUntil: at(490), wantMessage: "5m0s scale-down stabilization window holds 8",
		},
		{
			name: "scale-down window partially released",
			in: Input{Now: at(350), Spec: spec(1, 20, v1alpha1.Behavior{}, valueMetric("10")),
				SpecReplicas: 8, StatusReplicas: 8, Observations: []Observation{Available(5)},
				Recommendations: recommendations(0, 10, 100, 7, 190, 6)},
			want: 7, wantHolds: []string{ScaleDownStabilized}, wantHoldUntil: at(490),
		},
		{
			name: "default scale-down policy allows 100% per 15s",
			in: Input{Now: at(1000), Spec: spec(1, 20, v1alpha1.Behavior{}, valueMetric("10")),
				SpecReplicas: 8, StatusReplicas: 8, Observations: []Observation{Available(1)}, Recommendations: recommendations(600, 8)},
			want: 1,
		},
		{
			name: "default scale-up allows max(100%, 4) per 15s: small targets grow by 4",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{}, valueMetric("1")),
				SpecReplicas: 2, StatusReplicas: 2, Observations: []Observation{Available(50)}},
			want: 6, wantHolds: []string{ScaleUpLimited}, wantHoldUntil: at(15), wantMessage: "Count 4 per 15s",
		},
		{
			name: "default scale-up allows max(100%, 4) per 15s: large targets double",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{}, valueMetric("1")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(50)}},
			want: 20, wantHolds: []string{ScaleUpLimited}, wantMessage: "Percent 100% per 15s",
		},
		{
			name: "scale-up window holds the lowest recent recommendation",
			in: Input{Now: at(50), Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(60, "", count(100, 1))}, valueMetric("10")),
				SpecReplicas: 4, StatusReplicas: 4, Observations: []Observation{Available(30)},
				Recommendations: recommendations(0, 5, 20, 6, 40, 9)},
			want: 5, wantHolds: []string{ScaleUpStabilized}, wantHoldUntil: at(100), wantMessage: "holds 5 replicas (the lowest recent recommendation) instead of 12",
		},
		{
			name: "selectPolicy Min picks the smaller scale-up",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, v1alpha1.MinPolicySelect, percent(50, 60), count(4, 60))}, valueMetric("1")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(100)}},
			want: 14, wantHolds: []string{ScaleUpLimited}, wantMessage: "Count 4 per 60s (selectPolicy Min)",
		},
		{
			name: "selectPolicy Max picks the larger scale-up",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, v1alpha1.MaxPolicySelect, percent(50, 60), count(4, 60))}, valueMetric("1")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(100)}},
			want: 15, wantHolds: []string{ScaleUpLimited},
		},
		{
			name: "selectPolicy Disabled forbids scale-up",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, v1alpha1.DisabledPolicySelect)}, valueMetric("1")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(100)}},
			want: 10, wantHolds: []string{ScaleUpDisabled},
		},
		{
			name: "selectPolicy Disabled still lets the bounds raise to minReplicas",
			in: Input{Spec: spec(5, 100, v1alpha1.Behavior{ScaleUp: rules(0, v1alpha1.DisabledPolicySelect)}, valueMetric("1")),
				SpecReplicas: 2, StatusReplicas: 2, Observations: []Observation{Available(100)}},
			want: 5, wantHolds: []string{ScaleUpDisabled}, wantClamp: TooFewReplicas,
		},
		{
			name: "selectPolicy Min picks the smaller scale-down",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{ScaleDown: rules(0, v1alpha1.MinPolicySelect, percent(50, 60), count(2, 60))}, valueMetric("10")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(1)}},
			want: 8, wantHolds: []string{ScaleDownLimited},
		},
		{
			name: "selectPolicy Max picks the larger scale-down; Percent rounds the remainder down",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{ScaleDown: rules(0, v1alpha1.MaxPolicySelect, percent(50, 60), count(2, 60))}, valueMetric("10")),
				SpecReplicas: 9, StatusReplicas: 9, Observations: []Observation{Available(1)}},
			want: 4, wantHolds: []string{ScaleDownLimited},
		},
		{
			name: "selectPolicy Disabled forbids scale-down",
			in: Input{Spec: spec(1, 100000, v1alpha1.Behavior{ScaleDown: rules(0, v1alpha1.DisabledPolicySelect)}, valueMetric("10")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(1)}},
			want: 10, wantHolds: []string{ScaleDownDisabled},
		},
		{
			name: "selectPolicy Disabled still lets the bounds lower to maxReplicas",
			in: Input{Spec: spec(1, 6, v1alpha1.Behavior{ScaleDown: rules(0, v1alpha1.DisabledPolicySelect)}, valueMetric("10")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(1)}},
			want: 6, wantClamp: TooManyReplicas, wantHolds: []string{ScaleDownDisabled},
		},
		{
			name: "scale events inside the period use up the allowance",
			in: Input{Now: at(50), Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, "", count(4, 60))}, valueMetric("1")),
				SpecReplicas: 7, StatusReplicas: 7, Observations: []Observation{Available(100)},
				ScaleEvents: events(10, 2, 30, 1)},
			want: 8, wantHolds: []string{ScaleUpLimited}, wantHoldUntil: at(70),
		},
		{
			name: "scale events outside the period are forgotten",
			in: Input{Now: at(100), Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, "", count(4, 60))}, valueMetric("1")),
				SpecReplicas: 7, StatusReplicas: 7, Observations: []Observation{Available(100)},
				ScaleEvents: events(10, 2, 30, 1)},
			want: 11, wantHolds: []string{ScaleUpLimited}, wantHoldUntil: at(160),
		},
		{
			name: "scale-downs inside the period give the allowance back to scale-up",
			in: Input{Now: at(50), Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, "", count(4, 60))}, valueMetric("1")),
				SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(100)},
				ScaleEvents: events(10, -3)},
			want: 12, wantHolds: []string{ScaleUpLimited},
		},
		{
			name: "a target above the allowance is not pushed down by a scale-up policy",
			in: Input{Now: at(20), Spec: spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, "", count(1, 60))}, valueMetric("1")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(100)},
				ScaleEvents: events(10, 5)},
			want: 10, wantHolds: []string{ScaleUpLimited}, wantHoldUntil: at(70),
		},
		{
			name: "stabilization then rate limit: both are reported",
			in: Input{Now: at(100), Spec: spec(1, 100000, v1alpha1.Behavior{ScaleDown: rules(60, "", count(1, 30))}, valueMetric("10")),
				SpecReplicas: 10, StatusReplicas: 10, Observations: []Observation{Available(10 * 0.2)},
				Recommendations: recommendations(50, 6)},
			want: 9, wantHolds: []string{ScaleDownStabilized, ScaleDownLimited},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in.Now.IsZero() {
				tc.in.Now = epoch
			}
			if tc.in.Tolerance == 0 {
				tc.in.Tolerance = DefaultTolerance
			}
			if n := len(tc.in.Recommendations); n > 0 {
				// The tables' histories are points: the newest was last recommended at its time.
				tc.in.LastRecommended = tc.in.Recommendations[n-1].Time.Time
			}
			d := Decide(tc.in)
			if d.DesiredReplicas != tc.want {
				t.Errorf("desired = %d, want %d; %s", d.DesiredReplicas, tc.want, d.Summary())
			}
			if got := strings.Join(holdReasons(d), ","); got != strings.Join(tc.wantHolds, ",") {
				t.Errorf("holds = %q, want %q; %s", got, strings.Join(tc.wantHolds, ","), d.Summary())
			}
			if !tc.wantHoldUntil.IsZero() {
				if len(d.Holds) == 0 || !d.Holds[len(d.Holds)-1].Until.Equal(tc.wantHoldUntil) {
					t.Errorf("holds %+v, want the last until %s", d.Holds, tc.wantHoldUntil)
				}
			}
			gotClamp := ""
			if d.Clamp != nil {
				gotClamp = d.Clamp.Reason
			}
			if gotClamp != tc.wantClamp {
				t.Errorf("clamp = %q, want %q", gotClamp, tc.wantClamp)
			}
			if !strings.Contains(d.Summary(), tc.wantMessage) {
				t.Errorf("summary %q does not contain %q", d.Summary(), tc.wantMessage)
			}
		})
	}
}

// step is one reconcile of a simulated control loop: the metric at that instant and the
// replicas the decision must arrive at.
type step struct {
	at    int
	value float64 // NaN-free; use unavailable for an outage
	down  bool    // the metric is unavailable
	want  int32
}

// simulate runs Decide as the controller does: history and scale events carried from one
// reconcile to the next through a JSON round trip of the status, LastRecommended in memory,
// and the target following its spec at once.
func simulate(t *testing.T, s v1alpha1.HorizontalAutoscalerSpec, start int32, steps []step) {
	t.Helper()
	status := v1alpha1.HorizontalAutoscalerStatus{}
	replicas := start
	var lastRecommended time.Time
	for _, st := range steps {
		o := Available(st.value)
		if st.down {
			o = Unavailable("down")
		}
		d := Decide(Input{Now: at(st.at), Spec: s, SpecReplicas: replicas, StatusReplicas: replicas,
			Observations: []Observation{o}, Recommendations: status.Recommendations, LastRecommended: lastRecommended, ScaleEvents: status.ScaleEvents, Tolerance: DefaultTolerance})
		if d.DesiredReplicas != st.want {
			t.Fatalf("at %ds with value %v: desired %d, want %d; %s", st.at, st.value, d.DesiredReplicas, st.want, d.Summary())
		}
		status.Recommendations, lastRecommended = d.Recommendations, d.LastRecommended
		status.ScaleEvents = RecordScale(at(st.at), status.ScaleEvents, d.DesiredReplicas-replicas, s.Behavior)
		replicas = d.DesiredReplicas
		raw, err := json.Marshal(status)
		if err != nil {
			t.Fatal(err)
		}
		status = v1alpha1.HorizontalAutoscalerStatus{}
		if err := json.Unmarshal(raw, &status); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScaleDownWindowSlidesOverTime(t *testing.T) {
	// Value target 10, 60s scale-down window, no rate limit on the way down.
	s := spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(0, "", percent(1000, 1)), ScaleDown: rules(60, "", percent(100, 1))}, valueMetric("10"))
	simulate(t, s, 4, []step{
		{at: 0, value: 40, want: 16},  // up at once: the scale-up window is 0
		{at: 10, value: 10, want: 16}, // on target
		{at: 20, value: 5, want: 16},  // asks for 8: held by the 16 of t=0 and t=10
		{at: 40, value: 5, want: 16},  // asks for 8
		{at: 70, value: 5, want: 8},   // t=10's 16 left the window at 70, the 8s remain
		{at: 80, value: 5, want: 8},   // asks for 4: held by the 8s of 20..70
		{at: 129, value: 5, want: 8},  // 70's 8 is still in the window
		{at: 130, value: 5, want: 4},  // 70's 8 left the window: the 4s of 80 and 129 remain
	})
}

func TestScaleUpWindowSlidesOverTime(t *testing.T) {
	s := spec(1, 100000, v1alpha1.Behavior{ScaleUp: rules(30, "", count(100, 1)), ScaleDown: rules(0, "", percent(100, 1))}, valueMetric("10"))
	simulate(t, s, 2, []step{
		{at: 0, value: 10, want: 2},  // on target: 2 recorded
		{at: 10, value: 40, want: 2}, // asks for 8: the 2 of t=0 holds
		{at: 20, value: 40, want: 2}, // asks for 8
		{at: 30, value: 40, want: 8}, // t=0 left the window: the lowest in it is 8
		{at: 40, value: 20, want: 8}, // asks for 16: the 8s of 20 and 30 hold it
		{at: 50, value: 10, want: 8}, // on target
	})
}

func TestRatePoliciesOverSeveralPeriods(t *testing.T) {
	// Count 2 per 30s up, 50% per 30s down; no windows.
	s := spec(1, 100000, v1alpha1.Behavior{
		ScaleUp:   rules(0, "", count(2, 30)),
		ScaleDown: rules(0, "", percent(50, 30)),
	}, averageMetric("1"))
	simulate(t, s, 2, []step{
		{at: 0, value: 10, want: 4},
		{at: 10, value: 10, want: 4},
		{at: 29, value: 10, want: 4},
		{at: 30, value: 10, want: 6}, // the t=0 event left the period
		{at: 45, value: 10, want: 6},
		{at: 60, value: 10, want: 8},
		{at: 90, value: 10, want: 10},
		{at: 120, value: 10, want: 10},
		{at: 130, value: 1, want: 5}, // 50% of 10
		{at: 140, value: 1, want: 5}, // the period started at 10 replicas, 5 already removed
		{at: 160, value: 1, want: 2}, // the t=130 event left the period: half of 5 is 2.5, rounded down
		{at: 175, value: 1, want: 2},
		{at: 190, value: 1, want: 1},
	})
}

func TestOutageNeverScalesDownButRecoversUp(t *testing.T) {
	s := spec(1, 100000, v1alpha1.Behavior{ScaleDown: rules(0, "", percent(100, 1))}, valueMetric("10"))
	simulate(t, s, 5, []step{
		{at: 0, value: 20, want: 10},
		{at: 10, down: true, want: 10},
		{at: 20, down: true, want: 10},
		{at: 30, value: 1, want: 1},
	})
}

func TestMixedAvailabilityOverTime(t *testing.T) {
	// Two metrics; the second goes missing while the first falls, then rises.
	s := spec(1, 100000, unlimited, valueMetric("10"), averageMetric("10"))
	replicas := int32(4)
	var history []v1alpha1.Recommendation
	var lastRecommended time.Time
	for _, st := range []struct {
		at     int
		first  Observation
		second Observation
		want   int32
	}{
		{0, Available(10), Available(40), 4},
		{10, Available(5), Unavailable("empty result"), 4}, // would go to 2: suspended
		{20, Available(30), Unavailable("empty result"), 12},
		{30, Available(10), Unavailable("empty result"), 12}, // on target, but no down while missing
		{40, Available(10), Available(10), 12},               // on target for the first, 1 for the second: 12
		{50, Available(1), Available(10), 2},
	} {
		d := Decide(Input{Now: at(st.at), Spec: s, SpecReplicas: replicas, StatusReplicas: replicas,
			Observations: []Observation{st.first, st.second}, Recommendations: history, LastRecommended: lastRecommended, Tolerance: DefaultTolerance})
		if d.DesiredReplicas != st.want {
			t.Fatalf("at %ds: desired %d, want %d; %s", st.at, d.DesiredReplicas, st.want, d.Summary())
		}
		history, lastRecommended, replicas = d.Recommendations, d.LastRecommended, d.DesiredReplicas
	}
}

func TestOnlyCompleteRecommendationsEnterTheHistory(t *testing.T) {
	s := spec(1, 100000, v1alpha1.Behavior{}, valueMetric("10"), valueMetric("10"))
	in := Input{Now: at(10), Spec: s, SpecReplicas: 4, StatusReplicas: 4, Tolerance: DefaultTolerance,
		Recommendations: recommendations(0, 4)}
	in.Observations = []Observation{Available(20), Available(10)}
	if got := Decide(in).Recommendations; len(got) != 2 || got[1].Replicas != 8 || !got[1].Time.Time.Equal(at(10)) {
		t.Errorf("with every metric available the history is %+v, want the 8 of t=10 appended", got)
	}
	in.Observations = []Observation{Available(20), Unavailable("timeout")}
	if got := Decide(in).Recommendations; len(got) != 1 || got[0].Replicas != 4 {
		t.Errorf("with a metric unavailable the history is %+v, want it unchanged", got)
	}
	in.Observations = []Observation{Unavailable("timeout"), Unavailable("timeout")}
	if got := Decide(in).Recommendations; len(got) != 1 || got[0].Replicas != 4 {
		t.Errorf("with every metric unavailable the history is %+v, want it unchanged", got)
	}
}

func TestDefaults(t *testing.T) {
	up, down := ScaleUpRules(v1alpha1.Behavior{}), ScaleDownRules(v1alpha1.Behavior{})
	if up.StabilizationWindow != 0 || up.SelectPolicy != v1alpha1.MaxPolicySelect || len(up.Policies) != 2 ||
		up.Policies[0] != percent(100, 15) || up.Policies[1] != count(4, 15) {
		t.Errorf("scale-up defaults = %+v", up)
	}
	if down.StabilizationWindow != 300*time.Second || down.SelectPolicy != v1alpha1.MaxPolicySelect || len(down.Policies) != 1 ||
		down.Policies[0] != percent(100, 15) {
		t.Errorf("scale-down defaults = %+v", down)
	}
	// A partly set direction keeps the defaults of the fields left unset.
	partial := ScaleDownRules(v1alpha1.Behavior{ScaleDown: &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](30)}})
	if partial.StabilizationWindow != 30*time.Second || len(partial.Policies) != 1 || partial.SelectPolicy != v1alpha1.MaxPolicySelect {
		t.Errorf("partial scale-down = %+v", partial)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	s := spec(1, 1000, v1alpha1.Behavior{ScaleUp: rules(60, "", count(1000, 10)), ScaleDown: rules(120, "", percent(100, 30))}, averageMetric("1"))
	var history []v1alpha1.Recommendation
	var lastRecommended time.Time
	var scaleEvents []v1alpha1.ScaleEvent
	replicas := int32(1)
	for i := range 2000 {
		// A sawtooth with a long period: many distinct values, many redundant ones.
		value := float64(1 + (i*7)%50)
		d := Decide(Input{Now: at(i * 5), Spec: s, SpecReplicas: replicas, StatusReplicas: replicas,
			Observations: []Observation{Available(value)}, Recommendations: history, LastRecommended: lastRecommended, ScaleEvents: scaleEvents, Tolerance: DefaultTolerance})
		history, lastRecommended = d.Recommendations, d.LastRecommended
		scaleEvents = RecordScale(at(i*5), scaleEvents, d.DesiredReplicas-replicas, s.Behavior)
		replicas = d.DesiredReplicas
		if len(history) > 120/5+1 {
			t.Fatalf("at step %d, %d recommendations kept for a 120s window at 5s steps", i, len(history))
		}
		if len(scaleEvents) > 30/5+1 {
			t.Fatalf("at step %d, %d scale events kept for a 30s period at 5s steps", i, len(scaleEvents))
		}
	}
}

func TestPruneDropsRedundantRecommendations(t *testing.T) {
	up, down := Rules{StabilizationWindow: 60 * time.Second}, Rules{StabilizationWindow: 300 * time.Second}
	got := prune(at(400), recommendations(50, 9, 110, 5, 200, 3, 210, 7, 300, 5, 390, 5, 400, 6), up, down)
	// 50 is too old; 110's 5 is covered by 300's 5; 300's by 390's; 200's 3 is the lowest and
	// 210's 7 the highest still in the window, both kept.
	want := recommendations(200, 3, 210, 7, 390, 5, 400, 6)
	if len(got) != len(want) {
		t.Fatalf("kept %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].Time.Equal(&want[i].Time) || got[i].Replicas != want[i].Replicas {
			t.Fatalf("kept %+v, want %+v", got, want)
		}
	}
}

func TestZeroReplicasWithMinReplicasDisablesScaling(t *testing.T) {
	for _, tc := range []struct {
		name         string
		minReplicas  int32
		wantDisabled bool
		want         int32
	}{
		{name: "minReplicas 1", minReplicas: 1, wantDisabled: true, want: 0},
		{name: "minReplicas 0 opts into scaling from zero", minReplicas: 0, wantDisabled: false, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Spec: spec(tc.minReplicas, 10, v1alpha1.Behavior{}, valueMetric("10")),
				Observations: []Observation{Available(50)}, Tolerance: DefaultTolerance})
			if d.Disabled != tc.wantDisabled || d.DesiredReplicas != tc.want {
				t.Errorf("disabled %t, desired %d; want %t, %d", d.Disabled, d.DesiredReplicas, tc.wantDisabled, tc.want)
			}
		})
	}
}

func TestTimesRoundUpToTheSecond(t *testing.T) {
	d := Decide(Input{Now: epoch.Add(1500 * time.Millisecond), Spec: spec(1, 10, v1alpha1.Behavior{}, valueMetric("10")),
		SpecReplicas: 2, StatusReplicas: 2, Observations: []Observation{Available(20)}, Tolerance: DefaultTolerance})
	// A first decision records the current replicas and its own recommendation.
	if len(d.Recommendations) != 2 || !d.Recommendations[0].Time.Time.Equal(at(2)) || !d.Recommendations[1].Time.Time.Equal(at(2)) {
		t.Errorf("recorded %+v, want two at %s", d.Recommendations, at(2))
	}
	e := RecordScale(epoch.Add(100*time.Millisecond), nil, 2, unlimited)
	if len(e) != 1 || !e[0].Time.Time.Equal(at(1)) {
		t.Errorf("recorded %+v, want one at %s", e, at(1))
	}
}

// TestWorkedExample is the example of docs/horizontalautoscaler.md, step by step.
func TestWorkedExample(t *testing.T) {
	s := spec(1, 12, v1alpha1.Behavior{ScaleDown: &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}, averageMetric("10"))
	status := v1alpha1.HorizontalAutoscalerStatus{}
	replicas := int32(2)
	var lastRecommended time.Time
	for _, st := range []struct {
		at        int
		value     float64
		raw, want int32
		hold      string
		until     time.Time
		clamp     string
	}{
		{at: 0, value: 20, raw: 2, want: 2},
		{at: 10, value: 140, raw: 14, want: 6, hold: ScaleUpLimited, until: at(25), clamp: TooManyReplicas},
		{at: 20, value: 140, raw: 14, want: 6, hold: ScaleUpLimited, until: at(25), clamp: TooManyReplicas},
		{at: 30, value: 140, raw: 14, want: 12, hold: ScaleUpLimited, until: at(45), clamp: TooManyReplicas},
		{at: 40, value: 30, raw: 3, want: 12, hold: ScaleDownStabilized, until: at(90)},
		{at: 50, value: 30, raw: 3, want: 12, hold: ScaleDownStabilized, until: at(90)},
		{at: 80, value: 30, raw: 3, want: 12, hold: ScaleDownStabilized, until: at(90)},
		{at: 90, value: 30, raw: 3, want: 3},
	} {
		d := Decide(Input{Now: at(st.at), Spec: s, SpecReplicas: replicas, StatusReplicas: replicas,
			Observations: []Observation{Available(st.value)}, Recommendations: status.Recommendations, LastRecommended: lastRecommended, ScaleEvents: status.ScaleEvents, Tolerance: DefaultTolerance})
		if d.Recommendation != st.raw || d.DesiredReplicas != st.want {
			t.Fatalf("at %ds: raw %d desired %d, want %d and %d; %s", st.at, d.Recommendation, d.DesiredReplicas, st.raw, st.want, d.Summary())
		}
		var hold Hold
		if len(d.Holds) > 0 {
			hold = d.Holds[len(d.Holds)-1]
		}
		if hold.Reason != st.hold || !hold.Until.Equal(st.until) {
			t.Errorf("at %ds: hold %q until %s, want %q until %s", st.at, hold.Reason, hold.Until, st.hold, st.until)
		}
		clamp := ""
		if d.Clamp != nil {
			clamp = d.Clamp.Reason
		}
		if clamp != st.clamp {
			t.Errorf("at %ds: clamp %q, want %q", st.at, clamp, st.clamp)
		}
		status.Recommendations, lastRecommended = d.Recommendations, d.LastRecommended
		status.ScaleEvents = RecordScale(at(st.at), status.ScaleEvents, d.DesiredReplicas-replicas, s.Behavior)
		replicas = d.DesiredReplicas
	}
}

func TestReplicasIsSingularForOne(t *testing.T) {
	for n, want := range map[int32]string{0: "0 replicas", 1: "1 replica", 2: "2 replicas"} {
		if got := Replicas(n); got != want {
			t.Errorf("Replicas(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSettlePending: a scale write recorded before it was made counts against the rate
// policies exactly when the target shows it, so a failure between the scale write and the
// status write can neither double a step nor hold back one the policies allow.
func TestSettlePending(t *testing.T) {
	// The HorizontalPodAutoscaler's default scale-up: 100% or 4 pods per 15s.
	spec := v1alpha1.HorizontalAutoscalerSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 100, Metrics: []v1alpha1.Metric{averageMetric("1")}}
	pending := *PendingScale(at(0), 10, 20)
	for _, tc := range []struct {
		name         string
		specReplicas int32
		wantApplied  bool
		// wantNext is what the next evaluation, a second later, sets when the metric asks for 100.
		wantNext int32
	}{
		{name: "the write was made: the step counts and the period is spent", specReplicas: 20, wantApplied: true, wantNext: 20},
		{name: "the write never happened: nothing is held back", specReplicas: 10, wantApplied: false, wantNext: 20},
		// Counted from 15, the period started at 5: the policies allow 10, so 15 stays.
		{name: "someone else moved the target: the step counts", specReplicas: 15, wantApplied: true, wantNext: 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, applied := SettlePending(at(1), pending, tc.specReplicas, nil, spec.Behavior)
			if applied != tc.wantApplied {
				t.Fatalf("applied = %t, want %t", applied, tc.wantApplied)
			}
			if applied && (len(events) != 1 || events[0].ReplicaChange != 10 || !events[0].Time.Equal(&pending.Time)) {
				t.Errorf("events %+v, want the +10 at the pending time", events)
			}
			if !applied && len(events) != 0 {
				t.Errorf("events %+v, want none for a write that never happened", events)
			}
			d := Decide(Input{Now: at(1), Spec: spec, SpecReplicas: tc.specReplicas, StatusReplicas: tc.specReplicas,
				Observations: []Observation{Available(100)}, ScaleEvents: events, Tolerance: DefaultTolerance})
			if d.DesiredReplicas != tc.wantNext {
				t.Errorf("next evaluation sets %d, want %d", d.DesiredReplicas, tc.wantNext)
			}
		})
	}
	if p := PendingScale(epoch.Add(100*time.Millisecond), 1, 2); !p.Time.Equal(ptr.To(metav1.NewTime(at(1)))) {
		t.Errorf("pending time %s, want it rounded up to the second as every recorded time", p.Time)
	}
}
