package provisioning

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// BenchmarkLedgerReserve reserves room for a 1,000-pod burst's 450 nodes, each from the 1,200
// candidates a small pod has on the real catalogue (400 types in three zones), as a pass's
// reserveAll does: without limits, and under a cpu limit they all fit. docs/benchmarks.md has the
// command and figures.
func BenchmarkLedgerReserve(b *testing.B) {
	candidates := builders.Candidates(400, "a", "b", "c")
	for _, limits := range []corev1.ResourceList{nil, cpu("1000000")} {
		b.Run(fmt.Sprintf("limits=%d", len(limits)), func(b *testing.B) {
			for range b.N {
				ledger := NewLedger()
				kept := candidates
				for range 450 {
					var err error
					if kept, _, err = ledger.Reserve(pools.Provisioner("default"), limits, nil, kept, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkGroupLaunches groups a 1,000-pod burst's 450 new nodes for their launches, each with
// the 1,200 candidates a small pod has on the real catalogue (400 types in three zones): the
// nodes sharing one list of instance types, and each with a copy of its own.
func BenchmarkGroupLaunches(b *testing.B) {
	var types []*cloudprovider.InstanceType
	for i, c := range builders.Candidates(400, "a", "b", "c") {
		if i%3 == 0 {
			types = append(types, c.InstanceType)
		}
		c.InstanceType.Offerings = append(c.InstanceType.Offerings, cloudprovider.Offering{Zone: c.Offering.Zone, CapacityType: c.Offering.CapacityType, Price: float64(i), Available: true})
	}
	requirements := []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b", "c"}}}
	for _, shared := range []bool{true, false} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			nodes := make([]*scheduling.NewNode, 450)
			for i := range nodes {
				nodes[i] = &scheduling.NewNode{Pool: pools.Provisioner("default"), Labels: map[string]string{"team": "a"}, InstanceTypes: types, Requirements: requirements}
				if !shared {
					nodes[i].InstanceTypes = slices.Clone(types)
				}
			}
			for range b.N {
				if groups := groupLaunches(nodes, 50); len(groups) != 9 {
					b.Fatalf("%d groups, want 9", len(groups))
				}
			}
		})
	}
}
