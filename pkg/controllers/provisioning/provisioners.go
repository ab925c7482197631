package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/conditions"
	"karpenter.sh/karpenter/pkg/controllers/nodepool/status"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/events"
	"karpenter.sh/karpenter/pkg/overlay"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// The pools as a pass takes them (their instance types, within their limits) and what a pass
// writes back on its Provisioners (the Ready and PricesCurrent conditions, lastScaleTime); a
// NodePool's status is its own controller's.

// snapshot reads the cluster from the cache and each pool's instance types from the cloud,
// marking a Provisioner not Ready when they cannot be resolved; the snapshot's NodeOverlays are
// applied to them. A NodePool takes part once its node class is Ready (its NodeClassReady
// condition says why not otherwise).
func (c *Controller) snapshot(ctx context.Context) (*state.Snapshot, map[pools.Key]*poolPlan, error) {
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return nil, nil, fmt.Errorf("listing provisioners, %w", err)
	}
	snapshot, err := c.cluster.Snapshot(ctx, c.clock.Now())
	if err != nil {
		return nil, nil, err
	}
	plans, overlayInputs, err := c.nodePoolPlans(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := range provisioners.Items {
		stored := &provisioners.Items[i]
		if stored.DeletionTimestamp != nil {
			continue
		}
		p := &poolPlan{key: pools.Provisioner(stored.Name), stored: stored, updated: stored.DeepCopy()}
		plans[p.key] = p
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
		overlayInputs = append(overlayInputs, OverlayPool(stored, types))
	}
	overlaid, _ := snapshot.AddInstanceTypes(overlayInputs)
	for key, types := range overlaid {
		plans[key].instanceTypes = types
	}
	all := snapshot.AllNodes()
	for key, p := range plans {
		p.nodes = Counted(all, key, snapshot.InstanceTypes)
	}
	return snapshot, plans, nil
}

// nodePoolPlans are the NodePools that may launch now, with their instance types as NodeOverlays
// match them (NodePoolInstanceTypes). One whose class cannot be read or whose instance types
// cannot be listed is left out of the pass, with an Event.
func (c *Controller) nodePoolPlans(ctx context.Context) (map[pools.Key]*poolPlan, []overlay.Pool, error) {
	var nodePools v1.NodePoolList
	if err := c.client.List(ctx, &nodePools); err != nil {
		return nil, nil, fmt.Errorf("listing nodepools, %w", err)
	}
	plans := map[pools.Key]*poolPlan{}
	var inputs []overlay.Pool
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		class, types, why, err := NodePoolInstanceTypes(ctx, c.client, c.instanceProvider, np)
		if err != nil {
			c.recorder.Event(np, corev1.EventTypeWarning, ReasonInstanceTypesUnresolved, err.Error())
		}
		if why != "" || err != nil {
			continue
		}
		p := &poolPlan{key: pools.NodePool(np.Name), nodePool: np, nodeClass: class}
		plans[p.key] = p
		inputs = append(inputs, OverlayNodePool(np, types))
	}
	return plans, inputs, nil
}

// NodePoolLeftOut says why a pass leaves a NodePool out whatever its node class: it is being
// deleted, or it is static (spec.replicas), its nodes kept by its own controller; "" when it
// takes part.
func NodePoolLeftOut(np *v1.NodePool) string {
	switch {
	case np.DeletionTimestamp != nil:
		return "it is being deleted"
	case np.Spec.Replicas != nil:
		return "it is static (spec.replicas): its own controller keeps its nodes"
	}
	return ""
}

// NodePoolInstanceTypes are the instance types a NodePool launches now, and its class: when it
// takes no part (NodePoolLeftOut, its class not Ready), why; the error reading its class or
// listing its instance types otherwise. The pass and `kubectl karpenter plan` read NodePools so.
func NodePoolInstanceTypes(ctx context.Context, reader client.Reader, lister cloudprovider.InstanceTypeLister, np *v1.NodePool) (*awsv1.EC2NodeClass, []*cloudprovider.InstanceType, string, error) {
	if why := NodePoolLeftOut(np); why != "" {
		return nil, nil, why, nil
	}
	class, notReady, err := ReadyNodeClass(ctx, reader, np)
	switch {
	case err != nil:
		return nil, nil, "", fmt.Errorf("reading the node class, %w", err)
	case class == nil:
		return nil, nil, notReady, nil
	}
	types, err := lister.InstanceTypes(ctx, NodePoolConstraints(np, class))
	if err != nil {
		return nil, nil, "", fmt.Errorf("listing instance types, %w", err)
	}
	return class, types, "", nil
}

// ReadyNodeClass is the NodePool's EC2NodeClass when it is Ready to launch from; when it is not
// (missing, or its conditions say why), nil and why, as the NodePool's NodeClassReady condition
// says it.
func ReadyNodeClass(ctx context.Context, reader client.Reader, np *v1.NodePool) (*awsv1.EC2NodeClass, string, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	var class *awsv1.EC2NodeClass
	if ref != nil && ref.GroupKind() == (schema.GroupKind{Group: awsv1.SchemeGroupVersion.Group, Kind: "EC2NodeClass"}) {
		class = &awsv1.EC2NodeClass{}
		if err := reader.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("reading EC2NodeClass %s, %w", ref.Name, err)
			}
			class = nil
		}
	}
	if ready, _, message := status.NodeClassReady(ref, class); ready != metav1.ConditionTrue {
		return nil, message, nil
	}
	return class, "", nil
}

// NodePoolConstraints are what the cloud needs of a NodePool to list its instance types.
func NodePoolConstraints(np *v1.NodePool, class client.Object) cloudprovider.Constraints {
	pool := scheduling.FromNodePool(np, nil)
	return cloudprovider.Constraints{Requirements: pool.Requirements, NodeClass: class}
}

// OverlayPool is a Provisioner's instance types as NodeOverlays match them: with its name and
// the labels of every node it launches.
func OverlayPool(p *v1alpha5.Provisioner, types []*cloudprovider.InstanceType) overlay.Pool {
	return overlay.Pool{Key: pools.Provisioner(p.Name), Labels: p.Spec.Labels, InstanceTypes: types}
}

// OverlayNodePool is a NodePool's instance types as NodeOverlays match them.
func OverlayNodePool(np *v1.NodePool, types []*cloudprovider.InstanceType) overlay.Pool {
	return overlay.Pool{Key: pools.NodePool(np.Name), Labels: scheduling.FromNodePool(np, nil).Labels, InstanceTypes: types}
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
func (c *Controller) updateLimitsCondition(plans map[pools.Key]*poolPlan) {
	for key, p := range plans {
		if p.instanceTypes == nil || p.updated == nil {
			continue
		}
		if p.updated.Spec.Limits == nil || len(p.updated.Spec.Limits.Resources) == 0 {
			p.updated.StatusConditions().MarkTrue(apis.ConditionReady)
			continue
		}
		used := c.ledger.Used(key, p.nodes)
		var exhausted *LimitExceededError
		for _, it := range p.instanceTypes {
			if exhausted = nodeFitsUnder(key, p.updated.Spec.Limits.Resources, used, it.Capacity); exhausted == nil {
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
func (c *Controller) writeStatus(ctx context.Context, plans map[pools.Key]*poolPlan) error {
	var errs []error
	for _, key := range sortedKeys(plans) {
		p := plans[key]
		if p.updated == nil {
			continue
		}
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
			errs = append(errs, fmt.Errorf("patching the status of provisioner %s, %w", key.Name, err))
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
