package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a NodeClaim. Ready is True once Launched, Registered and Initialized
// all are.
const (
	ConditionTypeLaunched       = "Launched"
	ConditionTypeRegistered     = "Registered"
	ConditionTypeInitialized    = "Initialized"
	ConditionTypeReady          = "Ready"
	ConditionTypeDrifted        = "Drifted"
	ConditionTypeConsolidatable = "Consolidatable"
)

// NodeClaimStatus is what became of the launch.
type NodeClaimStatus struct {
	// NodeName is the name of the node that registered for the instance.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud's id of the instance, as the node's spec.providerID has it.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the image the instance booted.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the node's expected capacity, by its instance type.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the node's expected allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions: Launched, Registered, Initialized and Ready, with the reason of each.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod last started or stopped running on the node.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

// lifecycleConditions are the conditions Ready sums up, in the order a NodeClaim meets them.
var lifecycleConditions = []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}

// Condition returns the condition of the type, nil when unset.
func (nc *NodeClaim) Condition(conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(nc.Status.Conditions, conditionType)
}

// IsTrue is whether the condition of the type is True.
func (nc *NodeClaim) IsTrue(conditionType string) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, conditionType)
}

// SetCondition sets a condition, keeping its transition time when its status does not change,
// and sets Ready from the lifecycle conditions: True when all are, else the first that is not
// with its reason and message. It reports whether anything changed.
func (nc *NodeClaim) SetCondition(conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	changed := meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: message, ObservedGeneration: nc.Generation,
	})
	ready := metav1.Condition{Type: ConditionTypeReady, Status: metav1.ConditionTrue, Reason: ConditionTypeReady, ObservedGeneration: nc.Generation}
	for _, t := range lifecycleConditions {
		c := nc.Condition(t)
		if c == nil {
			ready = metav1.Condition{Type: ConditionTypeReady, Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation",
				Message: t + " is not set yet", ObservedGeneration: nc.Generation}
			break
		}
		if c.Status != metav1.ConditionTrue {
			ready = metav1.Condition{Type: ConditionTypeReady, Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: nc.Generation}
			break
		}
	}
	return meta.SetStatusCondition(&nc.Status.Conditions, ready) || changed
}
