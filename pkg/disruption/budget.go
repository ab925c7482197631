package disruption

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Allowed is how many more of a NodePool's nodes may be disrupted for reason at now: the least
// that any active budget naming the reason (or naming none) allows of its total nodes, less
// those already disrupting. A budget that cannot be read fails closed: it allows none, and the
// error says why. Without budgets, nothing bounds the disruption (upstream's `budgets: []`).
func Allowed(budgets []v1.Budget, reason v1.DisruptionReason, total, disrupting int, now time.Time) (int, error) {
	allowed := math.MaxInt32
	var errs []error
	for i := range budgets {
		b := &budgets[i]
		if len(b.Reasons) > 0 && !slices.Contains(b.Reasons, reason) {
			continue
		}
		n, err := budgetAllows(b, total, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("budget %d, %w", i, err))
		}
		allowed = min(allowed, n)
	}
	return max(allowed-disrupting, 0), errors.Join(errs...)
}

// budgetAllows is how many nodes of total one budget allows disrupted at now; MaxInt32 when it
// is not active.
func budgetAllows(b *v1.Budget, total int, now time.Time) (int, error) {
	active, err := Active(b, now)
	if err != nil {
		return 0, err
	}
	if !active {
		return math.MaxInt32, nil
	}
	nodes := intstr.FromString(b.Nodes)
	if n, err := strconv.Atoi(b.Nodes); err == nil {
		nodes = intstr.FromInt(n)
	}
	// Rounded up, as a PodDisruptionBudget's maxUnavailable: 10% of 5 nodes lets one go rather
	// than blocking the NodePool for good.
	n, err := intstr.GetScaledValueFromIntOrPercent(&nodes, total, true)
	if err != nil {
		return 0, fmt.Errorf("nodes %q, %w", b.Nodes, err)
	}
	return n, nil
}

// Active is whether a budget bounds disruption at now: always without a schedule, otherwise
// while less than its duration has passed since its schedule last hit, read in its time zone.
func Active(b *v1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil && b.Duration == nil {
		return true, nil
	}
	if b.Schedule == nil || b.Duration == nil {
		return false, errors.New("schedule and duration are set together")
	}
	zone := "UTC"
	if b.TimeZone != nil {
		zone = *b.TimeZone
	}
	location, err := time.LoadLocation(zone)
	if err != nil {
		return false, fmt.Errorf("time zone %q, %w", zone, err)
	}
	schedule, err := cron.ParseStandard(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("schedule %q, %w", *b.Schedule, err)
	}
	if spec, ok := schedule.(*cron.SpecSchedule); ok {
		spec.Location = location
	}
	// The schedule hit within the last duration exactly when its next hit after (now -
	// duration) is not later than now; a later hit only extends the window.
	next := schedule.Next(now.In(location).Add(-b.Duration.Duration))
	return !next.After(now), nil
}
