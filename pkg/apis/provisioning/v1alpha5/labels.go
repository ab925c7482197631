package v1alpha5

import corev1 "k8s.io/api/core/v1"

// Label keys Karpenter sets on the nodes it launches, and the keys a Provisioner may
// constrain in spec.requirements.
const (
	// ProvisionerNameLabelKey names the Provisioner that launched a node. Pods select a
	// Provisioner with a nodeSelector on this key.
	ProvisionerNameLabelKey = "karpenter.sh/provisioner-name"
	// CapacityTypeLabelKey is the purchase option of a node: CapacityTypeSpot or
	// CapacityTypeOnDemand.
	CapacityTypeLabelKey = "karpenter.sh/capacity-type"

	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
)

// WellKnownLabels are the node labels whose values come from the instance type and offering
// a node launches as; they are the only keys spec.requirements may constrain.
var WellKnownLabels = []string{
	corev1.LabelInstanceTypeStable,
	corev1.LabelTopologyZone,
	corev1.LabelArchStable,
	corev1.LabelOSStable,
	CapacityTypeLabelKey,
}
