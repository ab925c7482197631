package provisioning

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

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

// BenchmarkLaunchKey keys a 1,000-pod burst's 450 nodes for their launch groups, each with the
// 1,200 candidates a small pod has on the real catalogue.
func BenchmarkLaunchKey(b *testing.B) {
	candidates := builders.Candidates(400, "a", "b", "c")
	n := &scheduling.NewNode{Pool: pools.Provisioner("default"), Labels: map[string]string{"team": "a"}}
	for range b.N {
		for range 450 {
			_ = launchKey(n, candidates)
		}
	}
}
