package disruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	"karpenter.sh/karpenter/pkg/state"
)

// What the Provisioner methods read and do beyond the NodePools' methods: they delete Nodes
// (v1alpha5 nodes are drained by their own finalizer) and simulate with the scheduler's whole
// input.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=delete
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch

// ProvisionerMethod is a v1alpha5 Provisioner's way of removing nodes — ttlSecondsAfterEmpty,
// ttlSecondsUntilExpired, consolidation — run by the pass after the NodePools' methods, on the same snapshot, so that
// the two API generations never hand out the same room at once. Each keeps the behaviour and
// period documented for it (docs/node-lifecycle.md); Provisioners have no disruption budgets.
type ProvisionerMethod interface {
	// Name identifies the method in logs and in the controller label of the cloud metrics.
	Name() string
	// Period is how often the method runs at most: its flag's; zero runs it at every pass.
	Period() time.Duration
	// Act decides on the pass's snapshot, read only when the method needs it, and acts. acted
	// is whether it removed a node or launched a replacement: what fits where has changed, so
	// the methods after it wait for the next pass.
	Act(ctx context.Context, snapshot func() (*state.Snapshot, error)) (acted bool, err error)
}

// period is the wait between passes: the controller's, or a Provisioner method's if shorter,
// so that each method runs as often as its flag says.
func (c *Controller) period() time.Duration {
	period := c.Period
	for _, method := range c.Provisioners {
		if method.Period() > 0 {
			period = min(period, method.Period())
		}
	}
	return period
}

// actProvisioners runs the Provisioner methods that are due, in order, until one acts: a method
// after one that acted, here or among the NodePools' methods, waits for the next pass. A method
// that fails does not keep the others from running; a failure after a change counts as acting.
func (c *Controller) actProvisioners(ctx context.Context, snapshot func() (*state.Snapshot, error), acted bool) error {
	now := c.Clock.Now()
	var errs []error
	for _, method := range c.Provisioners {
		if acted {
			break
		}
		if !c.due(method, now) {
			continue
		}
		methodActed, err := method.Act(ctx, snapshot)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s, %w", method.Name(), err))
		}
		acted = methodActed
	}
	return errors.Join(errs...)
}

// due is whether the method's period has passed since it last ran; it is then recorded as
// running now.
func (c *Controller) due(method ProvisionerMethod, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ran := c.ranAt[method.Name()]; ran && now.Sub(last) < method.Period() {
		return false
	}
	c.ranAt[method.Name()] = now
	return true
}
