package scalablenodegroup

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Condition reasons for a group this object may not drive.
const (
	ReasonNotGranted = "NotGrantedToNamespace"
	ReasonDuplicate  = "DuplicateNodeGroup"
)

// refusal says why group may not drive nodeGroup, "" when it may: the cloud must grant the
// group to the object's namespace, and of several objects in that namespace naming the same
// group only the oldest drives it, so that two specs never fight over one size. Objects in
// other namespaces need no tie-break: the grant names one namespace, so they are refused
// by it, and an object created earlier elsewhere cannot take a group from its namespace.
func (c *Controller) refusal(ctx context.Context, group *v1alpha1.ScalableNodeGroup, nodeGroup cloudprovider.NodeGroup, observed cloudprovider.NodeGroupStatus) (reason, message string, err error) {
	if observed.GrantedNamespace != group.Namespace {
		granted := "is not tagged " + cloudprovider.NamespaceTag
		if observed.GrantedNamespace != "" {
			granted = fmt.Sprintf("is granted to namespace %q by its %s tag", observed.GrantedNamespace, cloudprovider.NamespaceTag)
		}
		return ReasonNotGranted, fmt.Sprintf("%s %s %s; tag it %s=%s to let this namespace drive it",
			group.Spec.Type, group.Spec.ID, granted, cloudprovider.NamespaceTag, group.Namespace), nil
	}
	claimants := &v1alpha1.ScalableNodeGroupList{}
	if err := c.client.List(ctx, claimants, client.InNamespace(group.Namespace)); err != nil {
		return "", "", fmt.Errorf("listing scalable node groups in %s, %w", group.Namespace, err)
	}
	owner := group
	for i := range claimants.Items {
		other := &claimants.Items[i]
		if other.Spec.Type != group.Spec.Type || !other.DeletionTimestamp.IsZero() {
			continue
		}
		// Building a group does no I/O; an id that does not build names no group.
		if g, err := c.groups.NodeGroupFor(string(other.Spec.Type), other.Spec.ID); err != nil || g.ID() != nodeGroup.ID() {
			continue
		}
		if older(other, owner) {
			owner = other
		}
	}
	if owner.Name != group.Name {
		return ReasonDuplicate, fmt.Sprintf("ScalableNodeGroup %s, created earlier, already drives %s %s; delete one of them",
			owner.Name, group.Spec.Type, group.Spec.ID), nil
	}
	return "", "", nil
}

// older orders claimants by creation, then name, so that every reconcile elects the same owner.
func older(a, b *v1alpha1.ScalableNodeGroup) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name // claimants share a namespace
}
