package scheduling_test

import (
	"fmt"
	"testing"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
)

// TestShrink compares plans before and after the shrink pass, on the seeded mixed workloads
// and the benchmark workload on both catalogues: the checker accepts both, shrink places the
// same pods on as many nodes and never makes a plan dearer, and on some it makes it cheaper (on
// the real catalogue at 100 pods, by a swap).
func TestShrink(t *testing.T) {
	inputs := map[string]scheduling.Input{
		"workload/1000": workloadInput(1000),
		"catalogue/100": {Pods: workloadPods(100), Pools: []scheduling.Pool{workloadProvisioner(emulatorInstanceTypes(t))}},
	}
	for seed := int64(1); seed <= 40; seed++ {
		inputs[fmt.Sprintf("mixed/%d", seed)] = workloads.Mixed(seed)
	}
	cheaper := 0
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			before, after := scheduling.PackOnly(in), scheduling.Schedule(in)
			for _, r := range []*scheduling.Results{before, after} {
				for _, err := range check.Verify(in, r) {
					t.Error(err)
				}
			}
			if len(after.Bindings) != len(before.Bindings) || len(after.NewNodes) != len(before.NewNodes) {
				t.Errorf("shrink changed what is placed: %d pods on %d nodes, before %d on %d", len(after.Bindings), len(after.NewNodes), len(before.Bindings), len(before.NewNodes))
			}
			if after.Price() > before.Price()+1e-9 {
				t.Errorf("shrink made the plan dearer: %.4f usd/hr, before %.4f", after.Price(), before.Price())
			}
			if after.Price() < before.Price()-1e-9 {
				cheaper++
			}
		})
	}
	if cheaper == 0 {
		t.Error("shrink made no plan cheaper")
	}
	t.Logf("shrink made %d of %d plans cheaper", cheaper, len(inputs))
}
