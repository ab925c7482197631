package scheduling_test

import (
	"fmt"
	"testing"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
)

// TestMixedConstraints schedules the seeded random workloads that mix every constraint kind the
// scheduler knows, over every kind of topology key, and has the checker verify each plan, with
// and without the batch packer (which never costs more).
func TestMixedConstraints(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := workloads.Mixed(seed)
			r := scheduling.Schedule(in)
			verified(t, in, r)
			if len(r.Bindings) == 0 {
				t.Error("no pod placed")
			}
			in.Pack = unboundedPacker()
			packed := scheduling.Schedule(in)
			verified(t, in, packed)
			if len(packed.Bindings) != len(r.Bindings) || packed.Price() > r.Price()*(1+1e-9) {
				t.Errorf("with the batch packer: %d pods placed for %.4f usd/hr, without: %d for %.4f", len(packed.Bindings), packed.Price(), len(r.Bindings), r.Price())
			}
		})
	}
}
