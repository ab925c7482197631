package scheduling_test

import (
	"fmt"
	"testing"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
)

// TestMixedConstraints schedules the seeded random workloads that mix every constraint kind the
// scheduler knows, over every kind of topology key, and has the checker verify each plan.
func TestMixedConstraints(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := workloads.Mixed(seed)
			r := scheduling.Schedule(in)
			verified(t, in, r)
			if len(r.Bindings) == 0 {
				t.Error("no pod placed")
			}
		})
	}
}
