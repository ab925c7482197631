package lifecycle_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
)

func TestTimeoutsExpired(t *testing.T) {
	created := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	timeouts := lifecycle.Timeouts{Launch: 5 * time.Minute, Registration: 15 * time.Minute, Initialization: 10 * time.Minute}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	condition := func(conditionType string, status metav1.ConditionStatus, since time.Duration) metav1.Condition {
		return metav1.Condition{Type: conditionType, Status: status, Reason: conditionType, LastTransitionTime: at(since)}
	}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		now        time.Duration
		reason     string
		remaining  time.Duration
	}{
		{name: "launching", now: 4 * time.Minute, remaining: time.Minute},
		{name: "never launched", now: 5 * time.Minute, reason: lifecycle.ReasonLaunchTimedOut},
		{name: "launch failed, waiting out its timeout", conditions: []metav1.Condition{condition(v1.ConditionTypeLaunched, metav1.ConditionFalse, time.Minute)},
			now: 6 * time.Minute, reason: lifecycle.ReasonLaunchTimedOut},
		{name: "registering", conditions: []metav1.Condition{condition(v1.ConditionTypeLaunched, metav1.ConditionTrue, time.Minute)},
			now: 15 * time.Minute, remaining: time.Minute},
		{name: "never registered", conditions: []metav1.Condition{condition(v1.ConditionTypeLaunched, metav1.ConditionTrue, time.Minute)},
			now: 16 * time.Minute, reason: lifecycle.ReasonRegistrationTimedOut},
		{name: "initializing", conditions: []metav1.Condition{condition(v1.ConditionTypeLaunched, metav1.ConditionTrue, 0),
			condition(v1.ConditionTypeRegistered, metav1.ConditionTrue, 2*time.Minute)}, now: 11 * time.Minute, remaining: time.Minute},
		{name: "never initialized", conditions: []metav1.Condition{condition(v1.ConditionTypeLaunched, metav1.ConditionTrue, 0),
			condition(v1.ConditionTypeRegistered, metav1.ConditionTrue, 2*time.Minute)}, now: 12 * time.Minute, reason: lifecycle.ReasonInitializationTimedOut},
		{name: "initialized, however old", conditions: []metav1.Condition{condition(v1.ConditionTypeLaunched, metav1.ConditionTrue, 0),
			condition(v1.ConditionTypeRegistered, metav1.ConditionTrue, 0), condition(v1.ConditionTypeInitialized, metav1.ConditionTrue, 0)}, now: 1000 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(0)}, Status: v1.NodeClaimStatus{Conditions: tc.conditions}}
			reason, remaining := timeouts.Expired(nc, created.Add(tc.now))
			if reason != tc.reason || remaining != tc.remaining {
				t.Errorf("Expired = %q, %s; want %q, %s", reason, remaining, tc.reason, tc.remaining)
			}
		})
	}
}
