package nodeoverlay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/controllers/nodeoverlay"
	"karpenter.sh/karpenter/pkg/overlay"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome overlay.Outcome
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"applies", overlay.Outcome{Matched: true}, metav1.ConditionTrue, nodeoverlay.ReasonValid, ""},
		{"matches nothing", overlay.Outcome{}, metav1.ConditionFalse, nodeoverlay.ReasonNoMatch, "match no offering"},
		{"conflicts", overlay.Outcome{Matched: true, ConflictsWith: "other"}, metav1.ConditionFalse, nodeoverlay.ReasonConflict, "NodeOverlay other of the same weight (5)"},
		{"cannot be read", overlay.Outcome{Invalid: errors.New("spec.price \"x\" is not a price")}, metav1.ConditionFalse, nodeoverlay.ReasonRuntimeValidation, "is not a price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "o", Generation: 3}, Spec: v1alpha1.NodeOverlaySpec{Weight: ptr.To[int32](5)}}
			got := nodeoverlay.Decide(o, tc.outcome, now)
			validation := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionTypeValidationSucceeded)
			ready := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionTypeReady)
			if validation == nil || ready == nil {
				t.Fatalf("conditions %+v, want ValidationSucceeded and Ready", got.Conditions)
			}
			if validation.Status != tc.status || validation.Reason != tc.reason || !strings.Contains(validation.Message, tc.message) || validation.ObservedGeneration != 3 {
				t.Errorf("ValidationSucceeded %+v, want %s %s %q at generation 3", validation, tc.status, tc.reason, tc.message)
			}
			if ready.Status != tc.status || ready.Message != validation.Message || (tc.status == metav1.ConditionFalse && ready.Reason != tc.reason) {
				t.Errorf("Ready %+v, want it to follow ValidationSucceeded %+v", ready, validation)
			}
			if !ready.LastTransitionTime.Time.Equal(now) {
				t.Errorf("Ready changed at %v, want the clock's %v", ready.LastTransitionTime, now)
			}
			o.Status = got
			again := nodeoverlay.Decide(o, tc.outcome, now.Add(time.Hour))
			if c := meta.FindStatusCondition(again.Conditions, v1alpha1.ConditionTypeReady); !c.LastTransitionTime.Time.Equal(now) {
				t.Errorf("an unchanged Ready moved to %v, want it kept at %v", c.LastTransitionTime, now)
			}
		})
	}
}
