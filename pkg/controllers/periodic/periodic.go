// Package periodic runs the controllers that act on the cluster as a whole every so often,
// rather than on one object's change: a loop the manager starts on the leader only, timed by the
// injected clock.
package periodic

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Loop runs Pass until its context is done. A pass that fails is logged, and the next one
// starts from the cluster as it then is.
type Loop struct {
	// Name is the controller's, in the logs.
	Name  string
	Clock clock.Clock
	// Pass is one look at the cluster.
	Pass func(ctx context.Context) error
	// Period is the wait after each pass; zero runs the next at once, for a Pass that waits
	// itself (a long poll).
	Period time.Duration
	// Delayed waits a Period before the first pass too.
	Delayed bool
	// MinRetryDelay, when set, is the wait after a failed pass instead of Period, doubling
	// after each failure in a row up to MaxRetryDelay.
	MinRetryDelay, MaxRetryDelay time.Duration
}

// Add runs the loop in the manager. A runnable that does not say otherwise runs on the leader
// only: two replicas acting on the same cluster would act twice.
func Add(mgr manager.Manager, loop *Loop) error {
	if loop.Name == "" || loop.Clock == nil || loop.Pass == nil {
		return fmt.Errorf("a periodic loop needs a name, a clock and a pass")
	}
	if err := mgr.Add(loop); err != nil {
		return fmt.Errorf("adding the %s loop, %w", loop.Name, err)
	}
	return nil
}

// Start implements manager.Runnable.
func (l *Loop) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("controller", l.Name)
	ctx = log.IntoContext(ctx, logger)
	if l.Delayed && !l.wait(ctx, l.Period) {
		return nil
	}
	retry := l.MinRetryDelay
	for {
		wait := l.Period
		if err := l.Pass(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if l.MinRetryDelay > 0 {
				wait = retry
				retry = min(2*retry, max(l.MaxRetryDelay, l.MinRetryDelay))
			}
			logger.Error(err, "pass failed", "retryIn", wait)
		} else {
			retry = l.MinRetryDelay
		}
		if !l.wait(ctx, wait) {
			return nil
		}
	}
}

// wait is false when ctx is done first.
func (l *Loop) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-l.Clock.After(d):
		return true
	}
}
