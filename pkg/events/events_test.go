package events_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/events"
)

func condition(status corev1.ConditionStatus, reason, message string) *apis.Condition {
	return &apis.Condition{Type: "AbleToScale", Status: status, Reason: reason, Message: message}
}

func TestOnConditionTransition(t *testing.T) {
	recovery := &events.Recovery{Reason: "Recovered", Message: func(was *apis.Condition) string { return "again after " + was.Reason }}
	for _, tc := range []struct {
		name          string
		before, after *apis.Condition
		recovery      *events.Recovery
		want          []string
	}{
		{name: "absent after", before: condition(corev1.ConditionFalse, "A", "a")},
		{name: "new condition False", after: condition(corev1.ConditionFalse, "A", "a"), want: []string{"Warning A a"}},
		{name: "True to False", before: condition(corev1.ConditionTrue, "", ""), after: condition(corev1.ConditionFalse, "A", "a"), want: []string{"Warning A a"}},
		{name: "Unknown to False", before: condition(corev1.ConditionUnknown, "A", ""), after: condition(corev1.ConditionFalse, "A", "a"), want: []string{"Warning A a"}},
		{name: "False for another reason", before: condition(corev1.ConditionFalse, "A", "a"), after: condition(corev1.ConditionFalse, "B", "b"), want: []string{"Warning B b"}},
		{name: "False for the same reason, new message", before: condition(corev1.ConditionFalse, "A", "request 1"), after: condition(corev1.ConditionFalse, "A", "request 2")},
		{name: "stays True", before: condition(corev1.ConditionTrue, "", ""), after: condition(corev1.ConditionTrue, "", "")},
		{name: "False to True without recovery", before: condition(corev1.ConditionFalse, "A", "a"), after: condition(corev1.ConditionTrue, "", "")},
		{name: "False to True with recovery", before: condition(corev1.ConditionFalse, "A", "a"), after: condition(corev1.ConditionTrue, "", ""), recovery: recovery, want: []string{"Normal Recovered again after A"}},
		{name: "Unknown to True with recovery", before: condition(corev1.ConditionUnknown, "", ""), after: condition(corev1.ConditionTrue, "", ""), recovery: recovery},
		{name: "new condition True with recovery", after: condition(corev1.ConditionTrue, "", ""), recovery: recovery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(4)
			events.OnConditionTransition(recorder, &v1alpha1.ScalableNodeGroup{}, tc.before, tc.after, tc.recovery)
			close(recorder.Events)
			var got []string
			for e := range recorder.Events {
				got = append(got, e)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d is %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
