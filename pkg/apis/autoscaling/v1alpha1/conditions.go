package v1alpha1

import "knative.dev/pkg/apis"

// Conditions every kind in this package may carry. Ready is the happy condition of each
// kind's condition set; the others are its dependents or informational.
const (
	// Active is true while every metric of a HorizontalAutoscaler could be read.
	Active apis.ConditionType = "Active"
	// AbleToScale is true while the scale target is reachable; while a stabilization window
	// or a rate policy holds a change back it stays true and its reason and message say which
	// and until when.
	AbleToScale apis.ConditionType = "AbleToScale"
	// ScalingUnbounded is false while the recommendation is clamped to min or max replicas.
	ScalingUnbounded apis.ConditionType = "ScalingUnbounded"
	// Stabilized is true while a node group has no change in flight.
	Stabilized apis.ConditionType = "Stabilized"
	// Calculable is true while a MetricsProducer could compute its value.
	Calculable apis.ConditionType = "Calculable"
)
