package conditions

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

func at(minute int) apis.VolatileTime {
	return apis.VolatileTime{Inner: metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC))}
}

func TestKeepTransitionTimes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before apis.Conditions
		after  apis.Condition
		want   apis.VolatileTime
	}{
		{name: "same status, new message keeps the time",
			before: apis.Conditions{{Type: "AbleToScale", Status: corev1.ConditionFalse, Reason: "NotFound", Message: "request id 1", LastTransitionTime: at(1)}},
			after:  apis.Condition{Type: "AbleToScale", Status: corev1.ConditionFalse, Reason: "NotFound", Message: "request id 2", LastTransitionTime: at(5)},
			want:   at(1)},
		{name: "same status, new reason keeps the time",
			before: apis.Conditions{{Type: "AbleToScale", Status: corev1.ConditionFalse, Reason: "NotFound", LastTransitionTime: at(1)}},
			after:  apis.Condition{Type: "AbleToScale", Status: corev1.ConditionFalse, Reason: "AccessDenied", LastTransitionTime: at(5)},
			want:   at(1)},
		{name: "a new status is a transition",
			before: apis.Conditions{{Type: "AbleToScale", Status: corev1.ConditionFalse, LastTransitionTime: at(1)}},
			after:  apis.Condition{Type: "AbleToScale", Status: corev1.ConditionTrue, LastTransitionTime: at(5)},
			want:   at(5)},
		{name: "a new condition keeps its own time",
			before: apis.Conditions{{Type: "Ready", Status: corev1.ConditionTrue, LastTransitionTime: at(1)}},
			after:  apis.Condition{Type: "AbleToScale", Status: corev1.ConditionTrue, LastTransitionTime: at(5)},
			want:   at(5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := apis.Conditions{tc.after}
			KeepTransitionTimes(tc.before, after)
			if got := after[0].LastTransitionTime; !got.Inner.Equal(&tc.want.Inner) {
				t.Errorf("lastTransitionTime %s, want %s", got.Inner, tc.want.Inner)
			}
		})
	}
}
