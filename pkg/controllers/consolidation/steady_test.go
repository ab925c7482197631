package consolidation_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

// overProvisioned is a cluster after a scale-down: nodes large nodes, each left with a few
// pods of different sizes.
func overProvisioned(nodes int) []scheduling.Node {
	var out []scheduling.Node
	sizes := []struct{ cpu, memory string }{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"1500m", "3Gi"}}
	for i := range nodes {
		var bound []*corev1.Pod
		for j := range 1 + i%3 {
			size := sizes[(i+j)%len(sizes)]
			bound = append(bound, pod(fmt.Sprintf("pod-%d-%d", i, j), size.cpu, size.memory))
		}
		out = append(out, node(fmt.Sprintf("node-%03d", i), "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, bound...))
	}
	return out
}

// apply makes a decision real as the controller and kube-scheduler would: the replacement
// joins, the removed nodes' pods are placed on the rest, which the decision promised they fit.
func apply(t testing.TB, s *consolidation.Snapshot, d consolidation.Decision) {
	t.Helper()
	gone := map[string]bool{}
	var moved []*corev1.Pod
	for _, n := range d.Nodes {
		gone[n.Name] = true
	}
	var kept []scheduling.Node
	for _, n := range s.Nodes {
		if gone[n.Node.Name] {
			for _, p := range n.Pods {
				p.Spec.NodeName = ""
				moved = append(moved, p)
			}
			continue
		}
		kept = append(kept, n)
	}
	for i, replacement := range d.Replacements {
		c := replacement.Offerings()[0]
		n := node(fmt.Sprintf("replacement-%d-%d", len(s.Nodes)+len(kept), i), replacement.Pool.Name, c.InstanceType.Name, c.Offering.CapacityType)
		n.Node.Name += "-" + d.Nodes[0].Name
		n.Node.CreationTimestamp = metav1.Time{Time: s.Now}
		kept = append(kept, n)
	}
	results := scheduling.Schedule(scheduling.Input{Pods: moved, Pools: []scheduling.Pool{s.Provisioners[0].Pool()}, Nodes: kept})
	if len(results.NewNodes) > 0 || len(results.Unschedulable) > 0 {
		t.Fatalf("after %s of %d nodes the pods need %d new nodes, %d fit nowhere", d.Action, len(d.Nodes), len(results.NewNodes), len(results.Unschedulable))
	}
	index := map[string]int{}
	for i, n := range kept {
		index[n.Node.Name] = i
	}
	for _, b := range results.Bindings {
		b.Pod.Spec.NodeName = b.NodeName
		kept[index[b.NodeName]].Pods = append(kept[index[b.NodeName]].Pods, b.Pod)
	}
	s.Nodes = kept
}

func price(t testing.TB, s consolidation.Snapshot) float64 {
	t.Helper()
	total := 0.0
	for _, n := range s.Nodes {
		for _, it := range s.Provisioners[0].InstanceTypes {
			if it.Name == n.Node.Labels[corev1.LabelInstanceTypeStable] {
				for _, o := range it.Offerings {
					if o.Zone == n.Node.Labels[corev1.LabelTopologyZone] && o.CapacityType == n.Node.Labels[v1alpha5.CapacityTypeLabelKey] {
						total += o.Price
					}
				}
			}
		}
	}
	return total
}

func podCount(s consolidation.Snapshot) int {
	count := 0
	for _, n := range s.Nodes {
		count += len(n.Pods)
	}
	return count
}

// TestSteadyState consolidates an over-provisioned cluster pass after pass: the cost falls,
// every pod keeps a node, and once nothing is worth doing, passes on the stable workload do
// nothing, however many.
func TestSteadyState(t *testing.T) {
	p := provisioner("default", v1alpha5.CapacityTypeOnDemand, true)
	p.Provisioner.Spec.Consolidation.Budget = ptr.To(intstr.FromString("20%"))
	s := consolidation.Snapshot{Nodes: overProvisioned(20), Provisioners: []consolidation.Provisioner{p}, Now: now}
	before, pods := price(t, s), podCount(s)
	passes := 0
	for ; passes < 100; passes++ {
		d := consolidation.Decide(s, settings)
		if d.Action == consolidation.None {
			break
		}
		if d.Saving <= settings.Threshold*d.Price {
			t.Fatalf("pass %d saves $%.4f/h of $%.4f/h, under the threshold", passes, d.Saving, d.Price)
		}
		apply(t, &s, d)
		// The next pass comes when the replacement is old enough to be considered again.
		s.Now = s.Now.Add(settings.MinNodeAge)
	}
	after := price(t, s)
	t.Logf("%d passes: %d nodes, $%.3f/h → $%.3f/h", passes, len(s.Nodes), before, after)
	if after >= before*0.5 || podCount(s) != pods {
		t.Fatalf("$%.3f/h → $%.3f/h with %d of %d pods", before, after, podCount(s), pods)
	}
	names := func() []string {
		var out []string
		for _, n := range s.Nodes {
			out = append(out, n.Node.Name)
		}
		return out
	}
	settled := names()
	for pass := range 10 {
		s.Now = s.Now.Add(time.Minute)
		if d := consolidation.Decide(s, settings); d.Action != consolidation.None {
			t.Fatalf("steady pass %d: %s of %d nodes saving $%.4f/h", pass, d.Action, len(d.Nodes), d.Saving)
		}
	}
	if !slices.Equal(names(), settled) {
		t.Fatal("the nodes changed in the steady state")
	}
}
