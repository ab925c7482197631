package disruption_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
)

func TestConsolidatableAt(t *testing.T) {
	initialized := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		after       string
		replicas    *int64
		initialized bool
		lastPod     time.Time
		want        time.Time
		wantOK      bool
	}{
		{name: "from initialization", after: "30s", initialized: true, want: initialized.Add(30 * time.Second), wantOK: true},
		{name: "from the last pod event", after: "30s", initialized: true, lastPod: initialized.Add(time.Hour), want: initialized.Add(time.Hour + 30*time.Second), wantOK: true},
		{name: "a pod event before initialization", after: "0s", initialized: true, lastPod: initialized.Add(-time.Minute), want: initialized, wantOK: true},
		{name: "not initialized", after: "30s"},
		{name: "never", after: "Never", initialized: true},
		{name: "a static NodePool", after: "30s", replicas: new(int64), initialized: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &v1.NodePool{Spec: v1.NodePoolSpec{Replicas: tc.replicas, Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration(tc.after)}}}
			nc := &v1.NodeClaim{Status: v1.NodeClaimStatus{LastPodEventTime: metav1.NewTime(tc.lastPod)}}
			if tc.initialized {
				nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(initialized)}}
			}
			got, ok := disruption.ConsolidatableAt(nc, np)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("ConsolidatableAt = %s, %v; want %s, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
