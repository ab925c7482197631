// Package autoscaler decides how many replicas a HorizontalAutoscaler's target should have.
// It is pure: the caller reads the metrics, the target's scale and the clock, and writes the
// result; nothing here performs I/O, so every rule is testable at any instant.
//
// The decision follows the Kubernetes HorizontalPodAutoscaler v2:
//
//  1. each metric recommends a replica count (Value, AverageValue or Utilization, with a
//     tolerance band and scale from zero);
//  2. the largest recommendation wins; while any metric is unavailable the target never
//     scales down, and while all are, nothing changes;
//  3. stabilization windows smooth the recommendation over its recent history;
//  4. rate policies limit the change per period, measured from recent scale events;
//  5. the result is clamped to [minReplicas, maxReplicas].
package autoscaler

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// DefaultTolerance is the band around a metric's target within which nothing changes.
const DefaultTolerance = 0.1

// Input is everything a decision depends on.
type Input struct {
	// Now is the instant of the decision.
	Now  time.Time
	Spec v1alpha1.HorizontalAutoscalerSpec
	// SpecReplicas is the replica count the target is asked for (its scale's spec): the
	// baseline of behaviour rules and what "no change" keeps.
	SpecReplicas int32
	// StatusReplicas is the replica count the target reports (its scale's status): what the
	// metrics reflect.
	StatusReplicas int32
	// Observations holds one entry per Spec.Metrics, in the same order.
	Observations []Observation
	// Recommendations and ScaleEvents are the history kept in the HorizontalAutoscaler's status.
	// Every recommendation but the newest is a point: its replicas were last recommended at its
	// time. The newest is a run: its replicas have been recommended at every complete
	// evaluation since its time, up to LastRecommended. Storing the newest's start rather than
	// its latest instant is what lets a steady evaluation leave the status as it is.
	Recommendations []v1alpha1.Recommendation
	// LastRecommended is when the newest of Recommendations was last recommended, as the
	// previous Decision's LastRecommended said; zero when unknown (after a restart), and then
	// the run counts as recommended until now, which holds a window at most one evaluation
	// longer, never shorter.
	LastRecommended time.Time
	ScaleEvents     []v1alpha1.ScaleEvent
	// Tolerance is the fraction within which a metric counts as on target, e.g. 0.1, for a
	// direction whose behavior sets none.
	Tolerance float64
}

// Decision is the outcome, with its reasons.
type Decision struct {
	// DesiredReplicas is what the target's scale should be set to.
	DesiredReplicas int32
	// Metrics holds each metric's recommendation, in the order of Spec.Metrics.
	Metrics []MetricRecommendation
	// Recommendation is the combined recommendation of the metrics before behaviour rules and
	// bounds; meaningless when no metric is available.
	Recommendation int32
	// Holds lists, in order of application, the rules that kept the replicas away from the
	// recommendation.
	Holds []Hold
	// Clamp is set when the replicas were held to minReplicas or maxReplicas, or when the
	// recommendation lies outside them.
	Clamp *Clamp
	// Recommendations is the history to keep in status, including this decision's when every
	// metric was available: a new run when it differs from the newest, else the newest run
	// unchanged.
	Recommendations []v1alpha1.Recommendation
	// LastRecommended is when the newest of Recommendations was last recommended: Now when
	// every metric was available, else Input.LastRecommended. The caller passes it back in the
	// next Input as long as the status it reads is the one this decision was written to.
	LastRecommended time.Time
	// Disabled is set when the target is at zero replicas while minReplicas is above zero:
	// scaling is switched off and DesiredReplicas stays 0.
	Disabled bool
}

// Clamp says that the bounds changed the outcome or will.
type Clamp struct {
	// Reason is TooFewReplicas or TooManyReplicas.
	Reason  string
	Message string
}

// Clamp reasons.
const (
	TooFewReplicas  = "TooFewReplicas"
	TooManyReplicas = "TooManyReplicas"
)

// Decide computes the desired replicas.
func Decide(in Input) Decision {
	// Windows and periods are measured from the exact instant; only what is recorded is
	// stamped to the second.
	now := in.Now
	up, down := ScaleUpRules(in.Spec.Behavior), ScaleDownRules(in.Spec.Behavior)
	current := in.SpecReplicas
	d := Decision{Metrics: make([]MetricRecommendation, len(in.Spec.Metrics))}
	if current == 0 && MinReplicas(in.Spec) > 0 {
		// The HorizontalPodAutoscaler's rule: a target someone scaled to zero is switched off,
		// not scaled back up, unless minReplicas 0 opts into scaling from zero.
		d.Disabled = true
		d.Recommendations, d.LastRecommended = in.Recommendations, in.LastRecommended
		return d
	}

	available, unavailable := 0, 0
	recommendation := int32(math.MinInt32)
	for i, m := range in.Spec.Metrics {
		o := Unavailable("no observation")
		if i < len(in.Observations) {
			o = in.Observations[i]
		}
		if m.Prometheus == nil {
			o = Unavailable("the metric has no source")
		}
		var target v1alpha1.MetricTarget
		if m.Prometheus != nil {
			target = m.Prometheus.Target
		}
		d.Metrics[i] = recommend(target, o, in.StatusReplicas, current, tolerances{up: up.tolerance(in.Tolerance), down: down.tolerance(in.Tolerance)})
		if d.Metrics[i].Available {
			available++
			recommendation = max(recommendation, d.Metrics[i].Replicas)
		} else {
			unavailable++
		}
	}

	// The newest run, as the point of its last recommendation: decisions are made on points.
	points, newest := asPoints(now, in.Recommendations, in.LastRecommended)
	d.LastRecommended = in.LastRecommended
	switch {
	case len(in.Spec.Metrics) == 0:
		// Without metrics the autoscaler only enforces the bounds.
		recommendation = current
	case available == 0:
		d.DesiredReplicas = current
		d.Recommendation = current
		d.Holds = append(d.Holds, Hold{Reason: ScalingSuspended, Message: fmt.Sprintf(
			"no metric is available, so the target stays at %s", Replicas(current))})
		d.Recommendations = asRuns(prune(now, points, up, down), newest)
		return d
	}
	d.Recommendation = recommendation

	past, history := points, points
	if len(past) == 0 {
		// First sight, or nothing recent: as the HorizontalPodAutoscaler, the current replicas
		// count as recommended now, so that the scale-down window protects a new object too.
		// Stabilized on the exact instant (a zero window ignores it), kept stamped like the rest.
		past = []v1alpha1.Recommendation{{Time: metav1.NewTime(now), Replicas: current}}
		history = []v1alpha1.Recommendation{{Time: metav1.NewTime(stamp(now)), Replicas: current}}
	}
	if unavailable == 0 {
		// Only a recommendation informed by every metric enters the history: a partial one
		// could understate what the missing metric asks for.
		history = append(slices.Clone(history), v1alpha1.Recommendation{Time: metav1.NewTime(stamp(now)), Replicas: recommendation})
		d.LastRecommended = now
	}
	d.Recommendations = asRuns(prune(now, history, up, down), newest)

	desired, hold := stabilize(now, recommendation, current, past, up, down)
	d.addHold(hold)
	if unavailable > 0 && desired < current {
		d.addHold(&Hold{Reason: ScaleDownSuspended, Message: fmt.Sprintf(
			"%d of %d metrics are unavailable, so the target stays at %s instead of %d", unavailable, len(in.Spec.Metrics), Replicas(current), desired)})
		desired = current
	}
	desired, hold = limitRate(now, desired, current, in.ScaleEvents, up, down)
	d.addHold(hold)

	minReplicas, maxReplicas := MinReplicas(in.Spec), in.Spec.MaxReplicas
	switch {
	case desired > maxReplicas:
		d.Clamp = &Clamp{Reason: TooManyReplicas, Message: clampMessage(recommendation, desired, "maxReplicas", maxReplicas)}
		desired = maxReplicas
	case desired < minReplicas:
		d.Clamp = &Clamp{Reason: TooFewReplicas, Message: clampMessage(recommendation, desired, "minReplicas", minReplicas)}
		desired = minReplicas
	// Not clamped yet, because a window or policy holds it, but the metrics already ask for
	// more than the bounds allow: say so now rather than when the limit is reached.
	case recommendation > maxReplicas:
		d.Clamp = &Clamp{Reason: TooManyReplicas, Message: fmt.Sprintf("the recommendation of %s is above maxReplicas %d", Replicas(recommendation), maxReplicas)}
	case recommendation < minReplicas:
		d.Clamp = &Clamp{Reason: TooFewReplicas, Message: fmt.Sprintf("the recommendation of %s is below minReplicas %d", Replicas(recommendation), minReplicas)}
	}
	d.DesiredReplicas = desired
	return d
}

func (d *Decision) addHold(h *Hold) {
	if h != nil {
		d.Holds = append(d.Holds, *h)
	}
}

// MinReplicas is spec.minReplicas, 1 when unset as for the HorizontalPodAutoscaler.
func MinReplicas(spec v1alpha1.HorizontalAutoscalerSpec) int32 {
	if spec.MinReplicas == nil {
		return 1
	}
	return *spec.MinReplicas
}

func clampMessage(recommendation, desired int32, bound string, value int32) string {
	if recommendation == desired {
		return fmt.Sprintf("the recommendation of %s is clamped to %s %d", Replicas(recommendation), bound, value)
	}
	return fmt.Sprintf("the recommendation of %s (%d after behaviour rules) is clamped to %s %d", Replicas(recommendation), desired, bound, value)
}

// Replicas renders a replica count for messages: "1 replica", "3 replicas".
func Replicas(n int32) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

// Summary is a one-line account of the decision for Events and logs.
func (d Decision) Summary() string {
	var parts []string
	for _, h := range d.Holds {
		parts = append(parts, h.Message)
	}
	if d.Clamp != nil {
		parts = append(parts, d.Clamp.Message)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("recommendation %d", d.Recommendation)
	}
	return fmt.Sprintf("recommendation %d; %s", d.Recommendation, strings.Join(parts, "; "))
}

// RecordScale appends a change of the target's replicas made at now to the scale events and
// drops the events no policy looks at any more.
func RecordScale(now time.Time, events []v1alpha1.ScaleEvent, change int32, behavior v1alpha1.Behavior) []v1alpha1.ScaleEvent {
	if change != 0 {
		events = append(slices.Clone(events), v1alpha1.ScaleEvent{Time: metav1.NewTime(stamp(now)), ReplicaChange: change})
	}
	keep := max(ScaleUpRules(behavior).longestPeriod(), ScaleDownRules(behavior).longestPeriod())
	cutoff := now.Add(-keep)
	return slices.DeleteFunc(slices.Clone(events), func(e v1alpha1.ScaleEvent) bool { return !e.Time.After(cutoff) })
}

// PendingScale records a change of the target's spec replicas about to be written at now.
func PendingScale(now time.Time, from, to int32) *v1alpha1.PendingScale {
	return &v1alpha1.PendingScale{Time: metav1.NewTime(stamp(now)), From: from, To: to}
}

// SettlePending resolves a scale write recorded by an earlier evaluation against the target's
// spec replicas now. Still at From: the write never happened (or was undone), so it is
// dropped and does not hold back what the policies allow. Anywhere else: the write happened,
// or something moved the target meanwhile, and counting it errs on the side of the rate
// policies; it joins the scale events at the time it was decided.
func SettlePending(now time.Time, pending v1alpha1.PendingScale, specReplicas int32, events []v1alpha1.ScaleEvent, behavior v1alpha1.Behavior) (settled []v1alpha1.ScaleEvent, applied bool) {
	if specReplicas == pending.From {
		return events, false
	}
	events = append(slices.Clone(events), v1alpha1.ScaleEvent{Time: pending.Time, ReplicaChange: pending.To - pending.From})
	return RecordScale(now, events, 0, behavior), true
}

// asPoints turns the status's history into points, the newest run becoming the point of its
// last recommendation (now when unknown), and returns that run as read.
func asPoints(now time.Time, runs []v1alpha1.Recommendation, lastRecommended time.Time) ([]v1alpha1.Recommendation, *v1alpha1.Recommendation) {
	if len(runs) == 0 {
		return nil, nil
	}
	newest := runs[len(runs)-1]
	last := now
	if !lastRecommended.IsZero() {
		last = stamp(lastRecommended)
	}
	points := slices.Clone(runs)
	points[len(points)-1].Time = metav1.NewTime(last)
	return points, &newest
}

// asRuns turns points back into the status's history: when the newest point continues the
// newest run (the same replicas, recommended again or not at all), the run keeps its start, so
// that an evaluation that recommends what it did before changes nothing.
func asRuns(points []v1alpha1.Recommendation, newest *v1alpha1.Recommendation) []v1alpha1.Recommendation {
	if len(points) == 0 || newest == nil {
		return points
	}
	last := &points[len(points)-1]
	if last.Replicas == newest.Replicas && !last.Time.Before(&newest.Time) {
		last.Time = newest.Time
	}
	return points
}

// prune drops recommendations that no window will look at again: those older than the longest
// window, and those a later one makes redundant (a later recommendation at least as high
// serves every scale-down window, one at most as low every scale-up window).
func prune(now time.Time, history []v1alpha1.Recommendation, up, down Rules) []v1alpha1.Recommendation {
	cutoff := now.Add(-max(up.StabilizationWindow, down.StabilizationWindow))
	var kept []v1alpha1.Recommendation
	laterHighest, laterLowest := int32(math.MinInt32), int32(math.MaxInt32)
	for i := len(history) - 1; i >= 0; i-- {
		r := history[i]
		if !r.Time.After(cutoff) {
			continue
		}
		if laterHighest >= r.Replicas && laterLowest <= r.Replicas {
			continue
		}
		laterHighest, laterLowest = max(laterHighest, r.Replicas), min(laterLowest, r.Replicas)
		kept = append(kept, r)
	}
	slices.Reverse(kept)
	return kept
}

// stamp rounds up to the second, the resolution at which status keeps time, so that history
// read back after a restart is the history used now; rounding up keeps a window or period
// in force for at most a second longer, never shorter.
func stamp(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}
