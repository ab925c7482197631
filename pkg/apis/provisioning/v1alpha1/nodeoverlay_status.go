package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a NodeOverlay. Ready is True once ValidationSucceeded is.
const (
	// ConditionTypeValidationSucceeded is False while the overlay cannot apply: it conflicts
	// with another of the same weight, or matches no instance type; the message says which.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	ConditionTypeReady               = "Ready"
)

// NodeOverlayStatus is whether the overlay applies.
type NodeOverlayStatus struct {
	// Conditions: ValidationSucceeded and Ready, with the reason of each.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
