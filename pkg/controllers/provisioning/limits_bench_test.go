package provisioning

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
)

// BenchmarkLedgerReserve reserves room for a 1,000-pod burst's 450 nodes, each from the 1,200
// candidates a small pod has on the real catalogue (400 types in three zones), as a pass's
// reserveAll does: without limits, and under a cpu limit they all fit. docs/benchmarks.md has the
// command and figures.
func BenchmarkLedgerReserve(b *testing.B) {
	var candidates []cloudprovider.Candidate
	for i := range 400 {
		it := &cloudprovider.InstanceType{Name: fmt.Sprintf("type-%d", i), Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(int64(2+i%64), resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(int64(4+i%256)<<30, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(110, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(20<<30, resource.BinarySI),
		}}
		for _, zone := range []string{"a", "b", "c"} {
			candidates = append(candidates, cloudprovider.Candidate{InstanceType: it, Offering: cloudprovider.Offering{Zone: zone}})
		}
	}
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
