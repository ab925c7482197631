package launcher

import (
	"testing"

	"karpenter.sh/karpenter/pkg/test/builders"
)

// BenchmarkRequirements writes the requirements of a 1,000-pod burst's 450 NodeClaims, each with
// the 1,200 candidates a small pod has on the real catalogue (400 types in three zones).
func BenchmarkRequirements(b *testing.B) {
	candidates := builders.Candidates(400, "a", "b", "c")
	for range b.N {
		for range 450 {
			_ = requirements(nil, candidates, nil)
		}
	}
}
