package readiness_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestDecide(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notReady := []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	karpenter := map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		taints   []corev1.Taint
		ready    corev1.ConditionStatus
		deleting bool
		// unfinalized is a node that lost its termination finalizer.
		unfinalized bool
		age         time.Duration
		want        readiness.Action
		recheck     time.Duration
	}{
		{name: "ready with the taint", labels: karpenter, taints: notReady, ready: corev1.ConditionTrue, age: time.Minute, want: readiness.RemoveTaint},
		{name: "ready long after the timeout", labels: karpenter, taints: notReady, ready: corev1.ConditionTrue, age: time.Hour, want: readiness.RemoveTaint},
		{name: "not reported yet", labels: karpenter, taints: notReady, age: time.Minute, want: readiness.Wait, recheck: 14 * time.Minute},
		{name: "not ready", labels: karpenter, taints: notReady, ready: corev1.ConditionFalse, age: 10 * time.Minute, want: readiness.Wait, recheck: 5 * time.Minute},
		{name: "never ready at the timeout", labels: karpenter, taints: notReady, ready: corev1.ConditionUnknown, age: 15 * time.Minute, want: readiness.Delete},
		{name: "never ready past the timeout", labels: karpenter, taints: notReady, age: time.Hour, want: readiness.Delete},
		// Finding 34.7: deleted, it would go without a drain.
		{name: "never ready past the timeout, without the termination finalizer", labels: karpenter, taints: notReady, unfinalized: true, age: time.Hour, want: readiness.Wait},
		{name: "was ready once, not ready now", labels: karpenter, ready: corev1.ConditionFalse, age: time.Hour, want: readiness.Wait},
		{name: "already being deleted", labels: karpenter, taints: notReady, deleting: true, age: time.Hour, want: readiness.Wait},
		{name: "not launched by Karpenter", taints: notReady, age: time.Hour, want: readiness.Wait},
		{name: "other taints only", labels: karpenter, taints: []corev1.Taint{{Key: "team", Effect: corev1.TaintEffectNoSchedule}}, ready: corev1.ConditionTrue, want: readiness.Wait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := builders.Node(builders.NodeOptions{Labels: tc.labels, Taints: tc.taints, Ready: tc.ready})
			if !tc.unfinalized {
				node.Finalizers = []string{v1alpha5.TerminationFinalizer}
			}
			node.CreationTimestamp = metav1.NewTime(created)
			if tc.deleting {
				node.DeletionTimestamp = &metav1.Time{Time: created.Add(time.Second)}
			}
			action, recheck := readiness.Decide(node, created.Add(tc.age), 15*time.Minute)
			if action != tc.want || recheck != tc.recheck {
				t.Errorf("Decide = %v, recheck %s; want %v, recheck %s", action, recheck, tc.want, tc.recheck)
			}
		})
	}
}
