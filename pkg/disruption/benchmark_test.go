package disruption_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// BenchmarkUnderutilizedPass times the decision of one pass of NodePools' consolidation over a
// 500-node over-provisioned cluster, the shape of the Provisioners' BenchmarkConsolidationPass
// (m5.2xlarge on-demand nodes holding one to three pods of 250m–1500m), its NodePool's budget
// 10% (the command and figures are in docs/benchmarks.md). It reports the cluster's $/h and what
// the pass's consolidation saves of it.
func BenchmarkUnderutilizedPass(b *testing.B) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	np := v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		}}},
		Disruption: v1.Disruption{Budgets: []v1.Budget{{Nodes: "10%"}}},
	}}
	types := fake.DefaultInstanceTypes()
	var it *cloudprovider.InstanceType
	for _, t := range types {
		if t.Name == "m5.2xlarge" {
			it = t
		}
	}
	snapshot := &state.Snapshot{Now: now, InstanceTypes: map[string]*cloudprovider.InstanceType{}}
	sizes := []string{"250m", "500m", "1", "1500m"}
	price := 0.0
	for i := range 500 {
		name := fmt.Sprintf("node-%03d", i)
		labels := map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: fake.Zones[i%len(fake.Zones)],
			v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: name}
		snapshot.NodeClaims = append(snapshot.NodeClaims, v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "default-" + name, Labels: labels, CreationTimestamp: metav1.Time{Time: now.Add(-time.Hour)}},
			Status: v1.NodeClaimStatus{NodeName: name, ProviderID: "fake:///" + name, Conditions: []metav1.Condition{
				{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue}, {Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue}}}})
		snapshot.Nodes = append(snapshot.Nodes, *builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Labels: labels, Allocatable: it.Allocatable(), Capacity: it.Capacity}))
		for j := range 1 + i%3 {
			size := sizes[(i+j)%len(sizes)]
			pod := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("pod-%d-%d", i, j), Requests: builders.Resources("cpu", size, "memory", "1Gi"),
				Owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}})
			pod.Spec.NodeName, pod.Status.Phase = name, corev1.PodRunning
			snapshot.Pods = append(snapshot.Pods, *pod)
		}
		p, _ := disruption.Price(&snapshot.Nodes[i], types)
		price += p
	}
	pools := []scheduling.Pool{scheduling.FromNodePool(&np, types)}
	var under disruption.Underutilized
	for b.Loop() {
		candidates := disruption.Candidates(snapshot, []v1.NodePool{np})
		decision := disruption.Decide(candidates, func(*disruption.Candidate) *disruption.Blocked { return nil }, now)
		under = disruption.ConsolidateUnderutilized(snapshot, decision.Underutilized, pools, 0.1, disruption.ConsolidationSettings{MinSpotTypes: disruption.DefaultSpotToSpotMinTypes})
	}
	b.ReportMetric(price, "$/h-before")
	b.ReportMetric(under.Saving, "$/h-saved-by-pass")
	b.ReportMetric(float64(len(under.Removed)), "nodes-removed")
}
