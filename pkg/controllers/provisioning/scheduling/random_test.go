package scheduling_test

import (
	"fmt"
	"testing"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
)

// TestMixedConstraints schedules the seeded random workloads that mix every constraint kind the
// scheduler knows, over every kind of topology key, and has the checker verify each plan.
func TestMixedConstraints(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := workloads.Mixed(seed)
			r := scheduling.Schedule(in)
			for i, err := range check.Verify(in, r) {
				if i == 10 {
					t.Error("...")
					break
				}
				t.Error(err)
			}
			if len(r.Bindings) == 0 {
				t.Error("no pod placed")
			}
		})
	}
}
