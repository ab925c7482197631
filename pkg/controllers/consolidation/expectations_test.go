package consolidation_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

func TestExpectations(t *testing.T) {
	old := node("old", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand)
	launched := node("new", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand)
	deleting := node("old", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand)
	deleting.Node.DeletionTimestamp = &metav1.Time{Time: now}
	snapshot := func(at time.Time, nodes ...scheduling.Node) *consolidation.Snapshot {
		return &consolidation.Snapshot{Nodes: nodes, Now: at}
	}
	e := &consolidation.Expectations{}
	if !e.Met(snapshot(now, old)) {
		t.Fatal("nothing expected, yet not met")
	}
	e.Launched(now, "new-nodeclaim", "new")
	e.Deleted("old", now)
	for _, step := range []struct {
		name string
		s    *consolidation.Snapshot
		met  bool
	}{
		{"the cache shows neither effect", snapshot(now, old), false},
		{"the cache shows the launch only", snapshot(now, old, launched), false},
		{"the cache shows the deletion too", snapshot(now, deleting, launched), true},
	} {
		if got := e.Met(step.s); got != step.met {
			t.Errorf("%s: met %t, want %t", step.name, got, step.met)
		}
	}
	e.Launched(now, "never-seen")
	if e.Met(snapshot(now.Add(30*time.Second), old)) {
		t.Error("an effect awaited for 30s is met")
	}
	if !e.Met(snapshot(now.Add(2*time.Minute), old)) {
		t.Error("an effect never seen is awaited forever")
	}
}
