package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a NodePool. Ready is True once ValidationSucceeded and NodeClassReady are.
const (
	// ConditionTypeValidationSucceeded is False while the NodePool holds something its schema
	// could not refuse but Karpenter cannot act on; the message says what.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeNodeClassReady mirrors the Ready condition of the NodePool's node class, and
	// is False when the class does not exist.
	ConditionTypeNodeClassReady = "NodeClassReady"
)

// NodePoolStatus is what the NodePool's nodes amount to and whether it can launch.
type NodePoolStatus struct {
	// Resources are the sums of the capacities of the NodePool's nodes, as limits count them.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of the NodePool's nodes.
	// +kubebuilder:default:=0
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the generation of the node class the conditions were
	// last computed from.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions: ValidationSucceeded, NodeClassReady and Ready, with the reason of each.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
