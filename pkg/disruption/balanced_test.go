package disruption_test

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/disruption"
)

func TestEvictionCost(t *testing.T) {
	pod := func(deletionCost string, priority *int32) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Priority: priority}}
		if deletionCost != "" {
			p.Annotations = map[string]string{corev1.PodDeletionCost: deletionCost}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want float64
	}{
		{name: "neither set", pod: pod("", nil), want: 1},
		{name: "deletion cost 2^27", pod: pod("134217728", nil), want: 2},
		{name: "priority 2^25", pod: pod("", ptr.To[int32](33554432)), want: 2},
		{name: "system-node-critical priority, clamped", pod: pod("", ptr.To[int32](2000001000)), want: 10},
		{name: "the lowest deletion cost, clamped", pod: pod("-2147483648", nil), want: -10},
		{name: "a deletion cost that is not a number counts as none", pod: pod("high", nil), want: 1},
	} {
		if got := disruption.EvictionCost(tc.pod); got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
	cheap := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.PodDeletionCost: "-2147483648"}}}
	if got := disruption.DisruptionCost([]*corev1.Pod{{}, cheap}); got != 2 {
		t.Errorf("DisruptionCost of a default pod and one free to evict: %g, want 2 (the node's 1, the pod's 1, none below 0)", got)
	}
}

func TestBalancedScore(t *testing.T) {
	totals := disruption.PoolTotals{Cost: 1, DisruptionCost: 10}
	for _, tc := range []struct {
		name               string
		saving, disruption float64
		want               float64
	}{
		{name: "10 % saved for 10 % disrupted", saving: 0.1, disruption: 1, want: 1},
		{name: "5 % saved for 10 % disrupted: the least k=2 takes", saving: 0.05, disruption: 1, want: 0.5},
		{name: "nothing saved", saving: 0, disruption: 1, want: 0},
		{name: "a loss", saving: -0.1, disruption: 1, want: 0},
	} {
		if got := disruption.BalancedScore(tc.saving, tc.disruption, totals); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}
