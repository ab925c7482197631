package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/conditions"
	"karpenter.sh/karpenter/pkg/events"
	"karpenter.sh/karpenter/pkg/overlay"
	"karpenter.sh/karpenter/pkg/state"
)

// The Provisioners as a pass takes them (their instance types, within their limits) and what a
// pass writes back on them (the Ready and PricesCurrent conditions, lastScaleTime).

// snapshot reads the cluster from the cache and each Provisioner's instance types from the
// cloud, marking the Provisioner not Ready when they cannot be resolved; the snapshot's
// NodeOverlays are applied to them.
func (c *Controller) snapshot(ctx context.Context) (*state.Snapshot, map[string]*provisionerPlan, error) {
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return nil, nil, fmt.Errorf("listing provisioners, %w", err)
	}
	snapshot, err := c.cluster.Snapshot(ctx, c.clock.Now())
	if err != nil {
		return nil, nil, err
	}
	plans := map[string]*provisionerPlan{}
	var pools []overlay.Pool
	for i := range provisioners.Items {
		stored := &provisioners.Items[i]
		if stored.DeletionTimestamp != nil {
			continue
		}
		p := &provisionerPlan{stored: stored, updated: stored.DeepCopy()}
		plans[stored.Name] = p
		c.markOffered(ctx, p)
		types, reason, err := ResolveInstanceTypes(ctx, c.instanceProvider, stored)
		if err != nil {
			p.updated.StatusConditions().MarkFalse(apis.ConditionReady, reason, "%v", err)
			p.unresolved = cloudprovider.ActionRequired(err)
			continue
		}
		if err := c.instanceProvider.StalePrices(); err != nil {
			p.updated.StatusConditions().MarkFalse(v1alpha5.ConditionPricesCurrent, ReasonPricesStale, "%v", err)
		} else {
			p.updated.StatusConditions().MarkTrue(v1alpha5.ConditionPricesCurrent)
		}
		pools = append(pools, OverlayPool(stored, types))
	}
	overlaid, _ := snapshot.AddInstanceTypes(pools)
	for name, types := range overlaid {
		plans[name].instanceTypes = types
	}
	for name, p := range plans {
		p.nodes = Counted(snapshot.Nodes, name, snapshot.InstanceTypes)
	}
	return snapshot, plans, nil
}

// OverlayPool is a Provisioner's instance types as NodeOverlays match them: with its name and
// the labels of every node it launches.
func OverlayPool(p *v1alpha5.Provisioner, types []*cloudprovider.InstanceType) overlay.Pool {
	return overlay.Pool{Name: p.Name, Labels: p.Spec.Labels, InstanceTypes: types}
}

// ResolveInstanceTypes are the instance types a Provisioner may launch; when there are none,
// the reason and why, as its Ready condition says them, naming the values of its requirements
// the cloud does not offer it.
func ResolveInstanceTypes(ctx context.Context, lister cloudprovider.InstanceTypeLister, p *v1alpha5.Provisioner) ([]*cloudprovider.InstanceType, string, error) {
	types, err := lister.InstanceTypes(ctx, Constraints(p))
	switch {
	case err != nil:
		if required := cloudprovider.ActionRequired(err); required != nil {
			return nil, required.Reason, fmt.Errorf("resolving instance types, %w", required)
		}
		return nil, ReasonInstanceTypesUnresolved, fmt.Errorf("resolving instance types, %w", err)
	case len(types) == 0:
		if notOffered, err := NotOffered(ctx, lister, p); err == nil && notOffered != "" {
			return nil, ReasonNoInstanceTypes, fmt.Errorf("no instance type satisfies the requirements; the cloud offers this Provisioner %s", notOffered)
		}
		return nil, ReasonNoInstanceTypes, errors.New("no instance type satisfies the requirements")
	}
	return types, "", nil
}

// Constraints are what the cloud needs of a Provisioner to list its instance types.
func Constraints(p *v1alpha5.Provisioner) cloudprovider.Constraints {
	requirements := make([]corev1.NodeSelectorRequirement, 0, len(p.Spec.Requirements))
	for _, r := range p.Spec.Requirements {
		requirements = append(requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
	}
	return cloudprovider.Constraints{Requirements: requirements, Provider: p.Spec.Provider}
}

// updateLimitsCondition marks a Provisioner whose limits leave room for none of its instance
// types not Ready, with what is used; it is Ready again once nodes go away.
func (c *Controller) updateLimitsCondition(plans map[string]*provisionerPlan) {
	for name, p := range plans {
		if p.instanceTypes == nil {
			continue
		}
		if p.updated.Spec.Limits == nil || len(p.updated.Spec.Limits.Resources) == 0 {
			p.updated.StatusConditions().MarkTrue(apis.ConditionReady)
			continue
		}
		used := c.ledger.Used(name, p.nodes)
		var exhausted *LimitExceededError
		for _, it := range p.instanceTypes {
			if exhausted = fitsUnder(name, p.updated.Spec.Limits.Resources, used, it.Capacity); exhausted == nil {
				break
			}
		}
		if exhausted != nil {
			p.updated.StatusConditions().MarkFalse(apis.ConditionReady, ReasonLimitsExhausted, "%s; no instance type fits under spec.limits", exhausted.Error())
		} else {
			p.updated.StatusConditions().MarkTrue(apis.ConditionReady)
		}
	}
}

// writeStatus patches what the pass changed of each Provisioner's status: the Ready
// condition (with an Event when it changes) and lastScaleTime. status.resources is the
// status controller's, and a merge patch leaves it as it is.
func (c *Controller) writeStatus(ctx context.Context, plans map[string]*provisionerPlan) error {
	var errs []error
	for _, name := range sortedNames(plans) {
		p := plans[name]
		if p.launched {
			p.updated.Status.LastScaleTime = &apis.VolatileTime{Inner: metav1.NewTime(c.clock.Now())}
		}
		events.OnConditionTransition(c.recorder, p.updated, p.stored.StatusConditions().GetCondition(apis.ConditionReady),
			p.updated.StatusConditions().GetCondition(apis.ConditionReady), &readyAgain)
		events.OnConditionTransition(c.recorder, p.updated, p.stored.StatusConditions().GetCondition(v1alpha5.ConditionPricesCurrent),
			p.updated.StatusConditions().GetCondition(v1alpha5.ConditionPricesCurrent), &pricesCurrentAgain)
		recordOffered(c.recorder, p)
		conditions.KeepTransitionTimes(p.stored.Status.Conditions, p.updated.Status.Conditions)
		if equality.Semantic.DeepEqual(p.stored.Status, p.updated.Status) {
			continue
		}
		if err := c.client.Status().Patch(ctx, p.updated, client.MergeFrom(p.stored)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("patching the status of provisioner %s, %w", name, err))
		}
	}
	return errors.Join(errs...)
}

var pricesCurrentAgain = events.Recovery{
	Reason:  "PricesCurrent",
	Message: func(*apis.Condition) string { return "The cloud's prices are read again" },
}

var readyAgain = events.Recovery{
	Reason:  "Ready",
	Message: func(was *apis.Condition) string { return "The provisioner can launch nodes again, after " + was.Reason },
}
