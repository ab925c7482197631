package consolidation_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
)

// BenchmarkConsolidationPass times one pass over a 500-node over-provisioned cluster (the
// command and figures are in docs/benchmarks.md) and reports the cluster's $/h before, after
// that pass's action, and once passes have settled.
func BenchmarkConsolidationPass(b *testing.B) {
	p := provisioner("default", v1alpha5.CapacityTypeOnDemand, true)
	p.Provisioner.Spec.Consolidation.Budget = ptr.To(intstr.FromString("10%"))
	s := consolidation.Snapshot{Nodes: overProvisioned(500), Provisioners: []consolidation.Provisioner{p}, Now: now}
	var d consolidation.Decision
	for b.Loop() {
		d = consolidation.Decide(s, settings)
	}
	b.StopTimer()
	before := price(b, s)
	apply(b, &s, d)
	b.ReportMetric(before, "$/h-before")
	b.ReportMetric(price(b, s), "$/h-after-pass")
	for range 100 {
		s.Now = s.Now.Add(settings.MinNodeAge)
		if d = consolidation.Decide(s, settings); d.Action == consolidation.None {
			break
		}
		apply(b, &s, d)
	}
	b.ReportMetric(price(b, s), "$/h-settled")
	b.ReportMetric(float64(len(s.Nodes)), "nodes-settled")
}
