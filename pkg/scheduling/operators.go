package scheduling

import corev1 "k8s.io/api/core/v1"

// Operators are the node selector operators NewRequirement understands, in the order
// Kubernetes documents them. In and NotIn take one or more values, Exists and DoesNotExist
// none, Gt and Lt exactly one integer.
var Operators = []corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn,
	corev1.NodeSelectorOpNotIn,
	corev1.NodeSelectorOpExists,
	corev1.NodeSelectorOpDoesNotExist,
	corev1.NodeSelectorOpGt,
	corev1.NodeSelectorOpLt,
}
