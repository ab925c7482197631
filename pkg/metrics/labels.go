// Package metrics holds what upstream Karpenter's metric families share here: their label names,
// how a node's or NodeClaim's labels become them, and the NodeClaim families (nodeclaims.go),
// which several controllers update. The other families live with the controller that updates
// them.
package metrics

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// Upstream Karpenter's label names.
const (
	NodePoolLabel         = "nodepool"
	ZoneLabel             = "zone"
	CapacityTypeLabel     = "capacity_type"
	ResourceTypeLabel     = "resource_type"
	ReasonLabel           = "reason"
	MinValuesRelaxedLabel = "min_values_relaxed"
)

// NodePool is the value of the nodepool label for a node or a NodeClaim: its NodePool's name, or
// the name of the Provisioner that launched it, so that upstream's queries group this project's
// nodes too; "" for a node Karpenter did not launch.
func NodePool(object metav1.Object) string {
	labels := object.GetLabels()
	if name := labels[v1.NodePoolLabelKey]; name != "" {
		return name
	}
	return labels[v1alpha5.ProvisionerNameLabelKey]
}

// Zone is the value of the zone label for a node or a NodeClaim.
func Zone(object metav1.Object) string {
	return object.GetLabels()[corev1.LabelTopologyZone]
}

// CapacityType is the value of the capacity_type label for a node or a NodeClaim.
func CapacityType(object metav1.Object) string {
	return object.GetLabels()[v1.CapacityTypeLabelKey]
}
