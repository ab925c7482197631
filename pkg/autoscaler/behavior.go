package autoscaler

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// Rules is one direction's behaviour with every default applied.
type Rules struct {
	StabilizationWindow time.Duration
	SelectPolicy        v1alpha1.ScalingPolicySelect
	Policies            []v1alpha1.ScalingPolicy
	// Tolerance is nil when the controller-wide tolerance applies.
	Tolerance *resource.Quantity
}

// Defaults, as the Kubernetes HorizontalPodAutoscaler v2 has them.
var (
	defaultScaleUpPolicies = []v1alpha1.ScalingPolicy{
		{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		{Type: v1alpha1.CountScalingPolicy, Value: 4, PeriodSeconds: 15},
	}
	defaultScaleDownPolicies = []v1alpha1.ScalingPolicy{
		{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}
)

const (
	defaultScaleUpWindow   = 0 * time.Second
	defaultScaleDownWindow = 300 * time.Second
)

// ScaleUpRules returns the scale-up behaviour with defaults for every field left unset.
func ScaleUpRules(b v1alpha1.Behavior) Rules {
	return withDefaults(b.ScaleUp, defaultScaleUpWindow, defaultScaleUpPolicies)
}

// ScaleDownRules returns the scale-down behaviour with defaults for every field left unset.
func ScaleDownRules(b v1alpha1.Behavior) Rules {
	return withDefaults(b.ScaleDown, defaultScaleDownWindow, defaultScaleDownPolicies)
}

func withDefaults(r *v1alpha1.ScalingRules, window time.Duration, policies []v1alpha1.ScalingPolicy) Rules {
	rules := Rules{StabilizationWindow: window, SelectPolicy: v1alpha1.MaxPolicySelect, Policies: policies}
	if r == nil {
		return rules
	}
	if r.StabilizationWindowSeconds != nil {
		rules.StabilizationWindow = time.Duration(*r.StabilizationWindowSeconds) * time.Second
	}
	if r.SelectPolicy != nil {
		rules.SelectPolicy = *r.SelectPolicy
	}
	if len(r.Policies) > 0 {
		rules.Policies = r.Policies
	}
	rules.Tolerance = r.Tolerance
	return rules
}

// tolerance is the band these rules set, or fallback.
func (r Rules) tolerance(fallback float64) float64 {
	if r.Tolerance == nil {
		return fallback
	}
	return max(0, r.Tolerance.AsApproximateFloat64())
}

// longestPeriod is how long scale events matter to these rules.
func (r Rules) longestPeriod() time.Duration {
	var longest time.Duration
	for _, p := range r.Policies {
		longest = max(longest, time.Duration(p.PeriodSeconds)*time.Second)
	}
	return longest
}

// Hold reports that a behaviour rule kept the replicas away from the recommendation.
type Hold struct {
	// Reason is a CamelCase word for conditions and Events, e.g. ScaleDownStabilized.
	Reason string
	// Message names the window or policy and says until when it holds.
	Message string
	// Until is when the hold would lift if the recommendation stayed the same; zero when it
	// lasts as long as the configuration (selectPolicy Disabled) or the metrics' outage.
	Until time.Time
}

// Hold reasons.
const (
	ScaleUpStabilized   = "ScaleUpStabilized"
	ScaleDownStabilized = "ScaleDownStabilized"
	ScaleUpLimited      = "ScaleUpLimited"
	ScaleDownLimited    = "ScaleDownLimited"
	ScaleUpDisabled     = "ScaleUpDisabled"
	ScaleDownDisabled   = "ScaleDownDisabled"
	// ScaleDownSuspended: a metric is unavailable, so nothing may scale down.
	ScaleDownSuspended = "ScaleDownSuspended"
	// ScalingSuspended: no metric is available, so nothing changes.
	ScalingSuspended = "ScalingSuspended"
)

// stabilize applies the stabilization windows: a scale-up goes only as high as the lowest
// recommendation within the scale-up window, a scale-down only as low as the highest within
// the scale-down window. recommendation itself counts as made now.
func stabilize(now time.Time, recommendation, current int32, history []v1alpha1.Recommendation, up, down Rules) (int32, *Hold) {
	upCutoff, downCutoff := now.Add(-up.StabilizationWindow), now.Add(-down.StabilizationWindow)
	lowest, highest := recommendation, recommendation
	for _, r := range history {
		if r.Time.After(upCutoff) {
			lowest = min(lowest, r.Replicas)
		}
		if r.Time.After(downCutoff) {
			highest = max(highest, r.Replicas)
		}
	}
	switch {
	case recommendation > current && lowest < recommendation:
		held := max(current, lowest)
		until := releaseTime(history, up.StabilizationWindow, upCutoff, func(r int32) bool { return r < recommendation })
		return held, &Hold{Reason: ScaleUpStabilized, Until: until, Message: fmt.Sprintf(
			"the %s scale-up stabilization window holds %s (the lowest recent recommendation) instead of %d until %s",
			up.StabilizationWindow, Replicas(held), recommendation, formatTime(until))}
	case recommendation < current && highest > recommendation:
		held := min(current, highest)
		until := releaseTime(history, down.StabilizationWindow, downCutoff, func(r int32) bool { return r > recommendation })
		return held, &Hold{Reason: ScaleDownStabilized, Until: until, Message: fmt.Sprintf(
			"the %s scale-down stabilization window holds %s (the highest recent recommendation) instead of %d until %s",
			down.StabilizationWindow, Replicas(held), recommendation, formatTime(until))}
	}
	return recommendation, nil
}

// releaseTime is when the last recommendation that blocks leaves the window.
func releaseTime(history []v1alpha1.Recommendation, window time.Duration, cutoff time.Time, blocks func(int32) bool) time.Time {
	var until time.Time
	for _, r := range history {
		if r.Time.After(cutoff) && blocks(r.Replicas) {
			if t := r.Time.Add(window); t.After(until) {
				until = t
			}
		}
	}
	return until
}

// limitRate applies the rate policies of the direction of travel from current to desired.
func limitRate(now time.Time, desired, current int32, events []v1alpha1.ScaleEvent, up, down Rules) (int32, *Hold) {
	switch {
	case desired > current:
		if up.SelectPolicy == v1alpha1.DisabledPolicySelect {
			return current, &Hold{Reason: ScaleUpDisabled, Message: fmt.Sprintf(
				"scale-up is disabled (selectPolicy Disabled): %s stay instead of %d", Replicas(current), desired)}
		}
		limit, policy := scaleUpLimit(now, current, events, up)
		if desired <= limit {
			return desired, nil
		}
		until := nextRelease(now, events, policy, limit != current)
		return limit, &Hold{Reason: ScaleUpLimited, Until: until, Message: fmt.Sprintf(
			"scale-up policy %s (selectPolicy %s) allows %s instead of %d; the next step is possible from %s",
			describePolicy(policy), up.SelectPolicy, Replicas(limit), desired, formatTime(until))}
	case desired < current:
		if down.SelectPolicy == v1alpha1.DisabledPolicySelect {
			return current, &Hold{Reason: ScaleDownDisabled, Message: fmt.Sprintf(
				"scale-down is disabled (selectPolicy Disabled): %s stay instead of %d", Replicas(current), desired)}
		}
		limit, policy := scaleDownLimit(now, current, events, down)
		if desired >= limit {
			return desired, nil
		}
		until := nextRelease(now, events, policy, limit != current)
		return limit, &Hold{Reason: ScaleDownLimited, Until: until, Message: fmt.Sprintf(
			"scale-down policy %s (selectPolicy %s) allows %s instead of %d; the next step is possible from %s",
			describePolicy(policy), down.SelectPolicy, Replicas(limit), desired, formatTime(until))}
	}
	return desired, nil
}

// changeWithin sums the replica changes of the events inside a policy's period.
func changeWithin(now time.Time, events []v1alpha1.ScaleEvent, period time.Duration) int32 {
	cutoff := now.Add(-period)
	var change int32
	for _, e := range events {
		if e.Time.After(cutoff) {
			change += e.ReplicaChange
		}
	}
	return change
}

// scaleUpLimit is the most replicas the policies allow now, and the policy that decided it.
func scaleUpLimit(now time.Time, current int32, events []v1alpha1.ScaleEvent, rules Rules) (int32, v1alpha1.ScalingPolicy) {
	limit, chosen := policyLimit(now, current, events, rules, func(start int64, p v1alpha1.ScalingPolicy) int64 {
		switch p.Type {
		case v1alpha1.CountScalingPolicy:
			return start + int64(p.Value)
		case v1alpha1.PercentScalingPolicy:
			// A percentage of zero is zero; allow one replica so scaling from zero is possible.
			return max(int64(math.Ceil(float64(start)*(1+float64(p.Value)/100))), start+1)
		}
		return 0
	}, func(a, b int32) bool { return a < b })
	// Policies never force a scale-down: a target already above the limit stays where it is.
	return max(limit, current), chosen
}

// scaleDownLimit is the fewest replicas the policies allow now, and the policy that decided it.
func scaleDownLimit(now time.Time, current int32, events []v1alpha1.ScaleEvent, rules Rules) (int32, v1alpha1.ScalingPolicy) {
	limit, chosen := policyLimit(now, current, events, rules, func(start int64, p v1alpha1.ScalingPolicy) int64 {
		switch p.Type {
		case v1alpha1.CountScalingPolicy:
			return start - int64(p.Value)
		case v1alpha1.PercentScalingPolicy:
			return int64(float64(start) * (1 - float64(p.Value)/100))
		}
		return 0
	}, func(a, b int32) bool { return a > b })
	// Policies never force a scale-up.
	return min(limit, current), chosen
}

// policyLimit is the limit the rules select and the policy that decided it. Each policy
// proposes its limit from the replicas at the start of its period; Min selects the tightest
// proposal (the least change), Max, the default, the loosest.
func policyLimit(now time.Time, current int32, events []v1alpha1.ScaleEvent, rules Rules,
	propose func(start int64, p v1alpha1.ScalingPolicy) int64, tighter func(a, b int32) bool) (int32, v1alpha1.ScalingPolicy) {
	var limit int32
	var chosen v1alpha1.ScalingPolicy
	selectMin := rules.SelectPolicy == v1alpha1.MinPolicySelect
	for i, p := range rules.Policies {
		start := int64(current) - int64(changeWithin(now, events, period(p)))
		proposed := clampInt32(propose(start, p))
		if i == 0 || (selectMin && tighter(proposed, limit)) || (!selectMin && tighter(limit, proposed)) {
			limit, chosen = proposed, p
		}
	}
	return limit, chosen
}

// nextRelease is when the deciding policy next allows more: the moment the oldest scale event
// inside its period, counting the one about to be made now, leaves the period.
func nextRelease(now time.Time, events []v1alpha1.ScaleEvent, policy v1alpha1.ScalingPolicy, scalingNow bool) time.Time {
	p := period(policy)
	cutoff := now.Add(-p)
	var until time.Time
	if scalingNow {
		until = now.Add(p)
	}
	for _, e := range events {
		if e.Time.After(cutoff) && e.ReplicaChange != 0 {
			if t := e.Time.Add(p); until.IsZero() || t.Before(until) {
				until = t
			}
		}
	}
	return until
}

func period(p v1alpha1.ScalingPolicy) time.Duration {
	return time.Duration(p.PeriodSeconds) * time.Second
}

func describePolicy(p v1alpha1.ScalingPolicy) string {
	unit := ""
	if p.Type == v1alpha1.PercentScalingPolicy {
		unit = "%"
	}
	return fmt.Sprintf("%s %d%s per %ds", p.Type, p.Value, unit, p.PeriodSeconds)
}

func clampInt32(v int64) int32 {
	return int32(max(math.MinInt32, min(math.MaxInt32, v)))
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "further notice"
	}
	return t.UTC().Format(time.RFC3339)
}
