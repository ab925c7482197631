package nodeoverlay

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/overlay"
)

// Reasons of the NodeOverlay's conditions; Conflict and RuntimeValidation are upstream's.
const (
	ReasonValid             = "Valid"
	ReasonConflict          = "Conflict"
	ReasonNoMatch           = "NoMatchingInstanceTypes"
	ReasonRuntimeValidation = "RuntimeValidation"
)

// Decide is the overlay's status given what became of it when applied with every other overlay
// to every pool's instance types: ValidationSucceeded, and Ready with it, False when it
// cannot be read, conflicts with an overlay of the same weight, or matches no offering. A
// condition that changes is stamped now; one that does not keeps its transition time.
func Decide(o *v1alpha1.NodeOverlay, outcome overlay.Outcome, now time.Time) v1alpha1.NodeOverlayStatus {
	status := *o.Status.DeepCopy()
	set := func(conditionType string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: conditionType, Status: s, Reason: reason, Message: message,
			ObservedGeneration: o.Generation, LastTransitionTime: metav1.NewTime(now)})
	}
	s, reason, message := metav1.ConditionTrue, ReasonValid, ""
	switch {
	case outcome.Invalid != nil:
		s, reason, message = metav1.ConditionFalse, ReasonRuntimeValidation, outcome.Invalid.Error()
	case outcome.ConflictsWith != "":
		weight := int32(0)
		if o.Spec.Weight != nil {
			weight = *o.Spec.Weight
		}
		s, reason = metav1.ConditionFalse, ReasonConflict
		message = fmt.Sprintf("conflicts with NodeOverlay %s of the same weight (%d), which sets the price of an offering or a resource of an instance type this one sets too; %s applies, this one applies nowhere: give one a higher weight", outcome.ConflictsWith, weight, outcome.ConflictsWith)
	case !outcome.Matched:
		s, reason, message = metav1.ConditionFalse, ReasonNoMatch, "its requirements match no offering of any Provisioner's or NodePool's instance types"
	}
	set(v1alpha1.ConditionTypeValidationSucceeded, s, reason, message)
	if s == metav1.ConditionTrue {
		reason = v1alpha1.ConditionTypeReady
	}
	set(v1alpha1.ConditionTypeReady, s, reason, message)
	return status
}
