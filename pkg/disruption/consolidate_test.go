package disruption_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestSavingsThreshold(t *testing.T) {
	for _, tc := range []struct {
		value *string
		want  float64
	}{
		{value: nil, want: 0.1},
		{value: ptr.To("0%"), want: 0},
		{value: ptr.To("5%"), want: 0.05},
		{value: ptr.To("100%"), want: 1},
		// The schema refuses these; should one get through, the controller's threshold holds.
		{value: ptr.To("5"), want: 0.1},
		{value: ptr.To("150%"), want: 0.1},
		{value: ptr.To("-5%"), want: 0.1},
	} {
		np := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{SavingsThreshold: tc.value}}}
		if got := disruption.SavingsThreshold(np, 0.1); got != tc.want {
			t.Errorf("savingsThreshold %v: %g, want %g", tc.value, got, tc.want)
		}
	}
}

// TestUnsettled: consolidation waits while a NodeClaim launches or a node's pods are about to
// move — the node being deleted, its NodeClaim being deleted, or tainted disrupted.
func TestUnsettled(t *testing.T) {
	deleting := metav1.Now()
	initialized := []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	settled := func() *state.Snapshot {
		return &state.Snapshot{
			NodeClaims: []v1.NodeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}, Status: v1.NodeClaimStatus{NodeName: "a", Conditions: initialized}}},
			Nodes:      []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
			Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "a"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*state.Snapshot)
		want   string
	}{
		{name: "settled", change: func(*state.Snapshot) {}},
		{name: "a nodeclaim launching", change: func(s *state.Snapshot) { s.NodeClaims[0].Status.Conditions = nil }, want: "nodeclaim default-a is launching"},
		{name: "a node being deleted with its pods", change: func(s *state.Snapshot) { s.Nodes[0].DeletionTimestamp = &deleting }, want: "node a is draining"},
		{name: "a nodeclaim being deleted, its node not yet", change: func(s *state.Snapshot) { s.NodeClaims[0].DeletionTimestamp = &deleting }, want: "node a is draining"},
		{name: "a node tainted disrupted with its pods", change: func(s *state.Snapshot) {
			s.Nodes[0].Spec.Taints = []corev1.Taint{{Key: v1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
		}, want: "node a is draining"},
		{name: "a node tainted disrupted, its pods gone", change: func(s *state.Snapshot) {
			s.Nodes[0].Spec.Taints = []corev1.Taint{{Key: v1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
			s.Pods = nil
		}},
	} {
		s := settled()
		tc.change(s)
		if got := disruption.Unsettled(s); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// sized is an on-demand amd64 instance type of one zone, a tenth of a core reserved.
func sized(name string, cpu int64, price float64) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(cpu<<31, resource.BinarySI), corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI)},
		Overhead:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Offerings: []cloudprovider.Offering{{Zone: "us-west-2a", CapacityType: v1alpha5.CapacityTypeOnDemand, Price: price, Available: true}},
	}
}

// TestConsolidateIntoFewerNodes: several nodes are replaced by fewer new ones when their pods
// cannot share one (hostname anti-affinity), each new node's types narrowed to its share of
// what the replacement may cost; as many new nodes as nodes removed is refused. Before
// replacements of several new nodes, the six small nodes below stayed: "its pods would need 2
// new nodes".
func TestConsolidateIntoFewerNodes(t *testing.T) {
	types := []*cloudprovider.InstanceType{sized("small", 1, 0.10), sized("medium", 2, 0.20), sized("large", 4, 0.40)}
	pool := scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "default"}), types)
	apart := []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "apart"})}
	cluster := func(nodes int, antiAffine int, typ *cloudprovider.InstanceType) ([]*disruption.Removal, []scheduling.Node) {
		var removals []*disruption.Removal
		var room []scheduling.Node
		for i := range nodes {
			name := fmt.Sprintf("%s-%d", typ.Name, i)
			options := builders.PodOptions{Name: fmt.Sprintf("pod-%d", i), Requests: builders.Resources("cpu", "600m"), NodeName: name}
			if i < antiAffine {
				options.Labels, options.PodAntiAffinity = map[string]string{"app": "apart"}, apart
			}
			pod := builders.Pod(options)
			node := builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Allocatable: typ.Allocatable(), Labels: map[string]string{
				v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: typ.Name, corev1.LabelTopologyZone: "us-west-2a",
				v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand, corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}})
			removals = append(removals, &disruption.Removal{Node: node, Pool: "default", Price: typ.Offerings[0].Price, Threshold: 0.1, Pods: []*corev1.Pod{pod}})
			room = append(room, scheduling.Node{Node: node, Pods: []*corev1.Pod{pod}})
		}
		return removals, room
	}
	for _, pack := range []*scheduling.Packer{nil, {Budget: time.Hour, Clock: clock.RealClock{}}} {
		removals, room := cluster(6, 2, types[0])
		simulation := disruption.Simulation{Room: room, Pools: []scheduling.Pool{pool}}
		c, why := simulation.Consolidate(removals, disruption.ConsolidationSettings{Pack: pack})
		if why != nil {
			t.Fatalf("packer %t: six nodes kept: %s", pack != nil, why.Message)
		}
		if len(c.Replacements) != 2 {
			t.Fatalf("packer %t: %d replacements, want 2", pack != nil, len(c.Replacements))
		}
		ceiling, dearest := 0.6*0.9, 0.0
		for _, r := range c.Replacements {
			most := 0.0
			for _, it := range r.InstanceTypes {
				most = max(most, it.Offerings[0].Price)
			}
			dearest += most
		}
		if dearest >= ceiling || c.Saving < 0.6*0.1 {
			t.Errorf("packer %t: the replacements may cost up to $%.4f/h together, over $%.4f/h; saving $%.4f/h", pack != nil, dearest, ceiling, c.Saving)
		}
	}
	// Two medium nodes would cost half as much as two small ones, but a replacement never
	// launches as many nodes as it removes.
	removals, room := cluster(2, 2, types[1])
	_, why := disruption.Simulation{Room: room, Pools: []scheduling.Pool{pool}}.Consolidate(removals, disruption.ConsolidationSettings{})
	if why == nil || why.Reason != disruption.ConsolidationNotCheaper || !strings.Contains(why.Message, "would need 2 new nodes") {
		t.Errorf("two nodes into two new ones: %v, want %s for the count", why, disruption.ConsolidationNotCheaper)
	}
}
