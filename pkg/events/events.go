// Package events emits Kubernetes Events for changes of an object's status conditions, once
// per change rather than once per reconcile: a persisting failure is one Event, and messages
// that differ every time (cloud request ids) do not make it another.
package events

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/apis"
)

// Recovery is the Normal Event for a condition that becomes True after being False.
type Recovery struct {
	Reason string
	// Message says what was recovered from, given the condition as it was while False.
	Message func(was *apis.Condition) string
}

// OnConditionTransition compares one condition before and after a reconcile and emits:
//   - a Warning with the condition's reason and message when it becomes False, or stays False
//     for another reason;
//   - the recovery Event, when recovery is not nil and the condition becomes True after False.
//
// A condition whose status and reason did not change emits nothing.
func OnConditionTransition(recorder record.EventRecorder, object runtime.Object, before, after *apis.Condition, recovery *Recovery) {
	if after == nil {
		return
	}
	wasFalse := before != nil && before.IsFalse()
	switch {
	case after.IsFalse() && (!wasFalse || before.Reason != after.Reason):
		recorder.Event(object, corev1.EventTypeWarning, after.Reason, after.Message)
	case after.IsTrue() && wasFalse && recovery != nil:
		recorder.Event(object, corev1.EventTypeNormal, recovery.Reason, recovery.Message(before))
	}
}
