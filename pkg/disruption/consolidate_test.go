package disruption_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/state"
)

func TestSavingsThreshold(t *testing.T) {
	for _, tc := range []struct {
		value *string
		want  float64
	}{
		{value: nil, want: 0.1},
		{value: ptr.To("0%"), want: 0},
		{value: ptr.To("5%"), want: 0.05},
		{value: ptr.To("100%"), want: 1},
		// The schema refuses these; should one get through, the controller's threshold holds.
		{value: ptr.To("5"), want: 0.1},
		{value: ptr.To("150%"), want: 0.1},
		{value: ptr.To("-5%"), want: 0.1},
	} {
		np := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{SavingsThreshold: tc.value}}}
		if got := disruption.SavingsThreshold(np, 0.1); got != tc.want {
			t.Errorf("savingsThreshold %v: %g, want %g", tc.value, got, tc.want)
		}
	}
}

// TestUnsettled: consolidation waits while a NodeClaim launches or a node's pods are about to
// move — the node being deleted, its NodeClaim being deleted, or tainted disrupted.
func TestUnsettled(t *testing.T) {
	deleting := metav1.Now()
	initialized := []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	settled := func() *state.Snapshot {
		return &state.Snapshot{
			NodeClaims: []v1.NodeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}, Status: v1.NodeClaimStatus{NodeName: "a", Conditions: initialized}}},
			Nodes:      []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
			Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "a"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*state.Snapshot)
		want   string
	}{
		{name: "settled", change: func(*state.Snapshot) {}},
		{name: "a nodeclaim launching", change: func(s *state.Snapshot) { s.NodeClaims[0].Status.Conditions = nil }, want: "nodeclaim default-a is launching"},
		{name: "a node being deleted with its pods", change: func(s *state.Snapshot) { s.Nodes[0].DeletionTimestamp = &deleting }, want: "node a is draining"},
		{name: "a nodeclaim being deleted, its node not yet", change: func(s *state.Snapshot) { s.NodeClaims[0].DeletionTimestamp = &deleting }, want: "node a is draining"},
		{name: "a node tainted disrupted with its pods", change: func(s *state.Snapshot) {
			s.Nodes[0].Spec.Taints = []corev1.Taint{{Key: v1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
		}, want: "node a is draining"},
		{name: "a node tainted disrupted, its pods gone", change: func(s *state.Snapshot) {
			s.Nodes[0].Spec.Taints = []corev1.Taint{{Key: v1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
			s.Pods = nil
		}},
	} {
		s := settled()
		tc.change(s)
		if got := disruption.Unsettled(s); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
