package autoscaler

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// TestRunsDecideAsPerEvaluationHistory: the status keeps the newest recommendation as a run
// (since when) instead of a point per evaluation. On sequences evaluated every 10s it gives
// the decisions of a history that records every complete evaluation; after a restart
// (LastRecommended unknown) a window may hold longer, never shorter.
func TestRunsDecideAsPerEvaluationHistory(t *testing.T) {
	const unavailable = -1
	for _, tc := range []struct {
		name     string
		behavior v1alpha1.Behavior
		start    int32
		values   []float64 // one per evaluation, 10s apart; unavailable for an outage
	}{
		{
			name:     "square wave under a scale-down window",
			behavior: v1alpha1.Behavior{ScaleDown: rules(60, "", percent(100, 1)), ScaleUp: rules(0, "", count(100, 1))},
			start:    2, values: []float64{10, 10, 10, 2, 2, 2, 2, 2, 2, 2, 2, 10, 2, 2, 2, 2, 2, 2, 2, 2},
		},
		{
			name:     "both windows over a sawtooth",
			behavior: v1alpha1.Behavior{ScaleDown: rules(40, "", percent(100, 1)), ScaleUp: rules(30, "", count(100, 1))},
			start:    4, values: []float64{4, 8, 12, 16, 4, 8, 12, 16, 16, 16, 16, 16, 3, 3, 3, 3, 3, 3, 3},
		},
		{
			name:     "an outage inside a run",
			behavior: v1alpha1.Behavior{ScaleDown: rules(50, "", percent(100, 1)), ScaleUp: rules(20, "", count(100, 1))},
			start:    6, values: []float64{6, 9, 9, unavailable, unavailable, unavailable, 3, 3, unavailable, 3, 3, 3, 3, 3, 3, 3},
		},
		{
			name:     "the default behaviour with rate policies",
			behavior: v1alpha1.Behavior{},
			start:    1, values: []float64{20, 20, 20, 20, 1, 1, 1, 40, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		},
	} {
		s := spec(1, 100, tc.behavior, averageMetric("1"))
		observe := func(v float64) []Observation {
			if v == unavailable {
				return []Observation{Unavailable("down")}
			}
			return []Observation{Available(v)}
		}
		// restart < 0: LastRecommended kept in memory throughout; else lost before that step.
		for restart := -1; restart < len(tc.values); restart++ {
			t.Run(fmt.Sprintf("%s, restart before step %d", tc.name, restart), func(t *testing.T) {
				// The reference records a point at every complete evaluation and never prunes.
				var points []v1alpha1.Recommendation
				var runs v1alpha1.HorizontalAutoscalerStatus
				var lastRecommended time.Time
				var scaleEvents []v1alpha1.ScaleEvent
				replicas := tc.start
				for i, v := range tc.values {
					now := at(i * 10)
					in := Input{Now: now, Spec: s, SpecReplicas: replicas, StatusReplicas: replicas, Observations: observe(v),
						ScaleEvents: scaleEvents, Tolerance: DefaultTolerance}
					reference := in
					reference.Recommendations = points
					if len(points) > 0 {
						reference.LastRecommended = points[len(points)-1].Time.Time
					}
					want := Decide(reference)
					if want.LastRecommended.Equal(now) {
						points = append(points, v1alpha1.Recommendation{Time: metav1.NewTime(now), Replicas: want.Recommendation})
					}

					if i == restart {
						lastRecommended = time.Time{}
					}
					in.Recommendations, in.LastRecommended = runs.Recommendations, lastRecommended
					got := Decide(in)
					lo, hi := min(replicas, want.DesiredReplicas), max(replicas, want.DesiredReplicas)
					switch {
					case restart >= 0 && i >= restart:
						// The run read after the restart counts until the first complete
						// evaluation since: a window may hold longer, never shorter.
						if got.DesiredReplicas < lo || got.DesiredReplicas > hi {
							t.Fatalf("step %d after a restart: desired %d, the reference %d from %d; %s", i, got.DesiredReplicas, want.DesiredReplicas, replicas, got.Summary())
						}
					case got.DesiredReplicas != want.DesiredReplicas:
						t.Fatalf("step %d: desired %d, the reference %d; %s / %s", i, got.DesiredReplicas, want.DesiredReplicas, got.Summary(), want.Summary())
					}
					if i > 0 && v == tc.values[i-1] && i != restart && !equality.Semantic.DeepEqual(got.Recommendations, runs.Recommendations) {
						// The same recommendation again: the status history stays as it is,
						// unless a run left the window.
						if len(got.Recommendations) >= len(runs.Recommendations) {
							t.Errorf("step %d recommends what step %d did and rewrites the history %+v as %+v", i, i-1, runs.Recommendations, got.Recommendations)
						}
					}
					runs.Recommendations, lastRecommended = got.Recommendations, got.LastRecommended
					raw, err := json.Marshal(runs)
					if err != nil {
						t.Fatal(err)
					}
					runs = v1alpha1.HorizontalAutoscalerStatus{}
					if err := json.Unmarshal(raw, &runs); err != nil {
						t.Fatal(err)
					}
					// The target follows the reference, so both decide from the same replicas.
					scaleEvents = RecordScale(now, scaleEvents, want.DesiredReplicas-replicas, s.Behavior)
					replicas = want.DesiredReplicas
				}
			})
		}
	}
}

// TestASteadyRecommendationKeepsItsStart: the newest run keeps the time it started while the
// same replicas are recommended, so the status does not change from one evaluation to the next.
func TestASteadyRecommendationKeepsItsStart(t *testing.T) {
	s := spec(1, 100, v1alpha1.Behavior{}, averageMetric("1"))
	in := Input{Spec: s, SpecReplicas: 5, StatusReplicas: 5, Observations: []Observation{Available(5)}, Tolerance: DefaultTolerance}
	var history []v1alpha1.Recommendation
	var lastRecommended time.Time
	for i := range 100 {
		in.Now, in.Recommendations, in.LastRecommended = at(i*10), history, lastRecommended
		d := Decide(in)
		history, lastRecommended = d.Recommendations, d.LastRecommended
		if len(history) != 1 || !history[0].Time.Time.Equal(at(0)) || history[0].Replicas != 5 || !lastRecommended.Equal(at(i*10)) {
			t.Fatalf("at %ds: history %+v last recommended %s, want the 5 since %s recommended now", i*10, history, lastRecommended, at(0))
		}
	}
	// A new value starts a run; the one before becomes the point of its last recommendation.
	in.Now, in.Recommendations, in.LastRecommended, in.Observations = at(1000), history, lastRecommended, []Observation{Available(8)}
	d := Decide(in)
	want := recommendations(990, 5, 1000, 8)
	if !equality.Semantic.DeepEqual(d.Recommendations, want) {
		t.Errorf("history %+v, want %+v", d.Recommendations, want)
	}
	// Unknown LastRecommended (a restart): the run counts as recommended until now.
	in.LastRecommended = time.Time{}
	if d := Decide(in); !equality.Semantic.DeepEqual(d.Recommendations, recommendations(1000, 5, 1000, 8)) {
		t.Errorf("after a restart the history is %+v, want the 5 counted until now", d.Recommendations)
	}
}
