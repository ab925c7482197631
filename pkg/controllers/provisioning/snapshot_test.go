package provisioning

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func catalogue() map[string]*cloudprovider.InstanceType {
	out := map[string]*cloudprovider.InstanceType{}
	for _, it := range fake.DefaultInstanceTypes() {
		out[it.Name] = it
	}
	return out
}

var notReady = corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}

func TestProvisionerNodes(t *testing.T) {
	reported := builders.Node(builders.NodeOptions{Name: "reported", Capacity: cpu("3"), Allocatable: cpu("3"),
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	unreported := builders.Node(builders.NodeOptions{Name: "unreported",
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	unreported.Status = corev1.NodeStatus{}
	other := builders.Node(builders.NodeOptions{Name: "other", Capacity: cpu("8"), Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "other"}})
	unmanaged := builders.Node(builders.NodeOptions{Name: "unmanaged", Capacity: cpu("8")})
	c := &state.Snapshot{Nodes: []corev1.Node{*reported, *unreported, *other, *unmanaged}, InstanceTypes: catalogue()}
	got := Counted(c.Nodes, pools.Provisioner("default"), c.InstanceTypes)
	reportedCPU, unreportedCPU := got["reported"][corev1.ResourceCPU], got["unreported"][corev1.ResourceCPU]
	if len(got) != 2 || !reportedCPU.Equal(resource.MustParse("3")) || !unreportedCPU.Equal(resource.MustParse("4")) {
		t.Errorf("default's nodes %v, want reported at 3 cores (the kubelet's word) and unreported at its instance type's 4", got)
	}
}

// TestUsedCountsALaunchedNodeClaimWithoutItsNode: a NodeClaim launched whose Node has not
// registered counts against its pool's limits by the capacity it recorded: after a restart no
// reservation stands for it. (The code before counted Nodes only, and launched past the limit.)
func TestUsedCountsALaunchedNodeClaimWithoutItsNode(t *testing.T) {
	nc := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde",
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}}}
	// Not the 4 cores of its type: what the instance reported counts.
	nc.Status.ProviderID, nc.Status.Capacity = "fake:///i-1", cpu("3")
	c := &state.Snapshot{NodeClaims: []v1.NodeClaim{nc}, InstanceTypes: catalogue()}
	used := Used(c, pools.Provisioner("default"))
	if cores, nodes := used[corev1.ResourceCPU], used[v1.LimitNodes]; !cores.Equal(resource.MustParse("3")) || !nodes.Equal(resource.MustParse("1")) {
		t.Errorf("used %v, want the nodeclaim's 3 cores and 1 node", used)
	}
}

// TestCountedNamesTheNodeClaimOfARegisteredNode: a node registered for a NodeClaim counts
// under its own name, and its NodeClaim's name counts nothing more, so that a reservation handed
// to the NodeClaim is dropped once its node is counted, whenever a pass first counts it.
func TestCountedNamesTheNodeClaimOfARegisteredNode(t *testing.T) {
	node := builders.Node(builders.NodeOptions{Name: "ip-1", Capacity: cpu("2"), Allocatable: cpu("2"),
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	node.OwnerReferences = []metav1.OwnerReference{nodeclaims.OwnerReference(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde"}})}
	got := Counted([]corev1.Node{*node}, pools.Provisioner("default"), catalogue())
	if cores := got["ip-1"][corev1.ResourceCPU]; len(got) != 2 || !cores.Equal(resource.MustParse("2")) || len(got["default-abcde"]) != 0 {
		t.Errorf("counted %v, want ip-1 at 2 cores and default-abcde at nothing", got)
	}
	used := NewLedger().Used(pools.Provisioner("default"), got)
	if cores, nodes := used[corev1.ResourceCPU], used[v1.LimitNodes]; !cores.Equal(resource.MustParse("2")) || !nodes.Equal(resource.MustParse("1")) {
		t.Errorf("used %v, want 2 cores and 1 node", used)
	}
}

func TestCandidatesCheapestFirstWithinRequirements(t *testing.T) {
	types := catalogue()
	n := &scheduling.NewNode{
		InstanceTypes: []*cloudprovider.InstanceType{types["m5.large"], types["c5.large"]},
		Requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a", "us-west-2b"}},
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeOnDemand}},
		},
	}
	var got []cloudprovider.OfferingKey
	for _, c := range n.Offerings() {
		got = append(got, c.Key())
	}
	want := []cloudprovider.OfferingKey{
		{InstanceType: "c5.large", Zone: "us-west-2a", CapacityType: "on-demand"},
		{InstanceType: "c5.large", Zone: "us-west-2b", CapacityType: "on-demand"},
		{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand"},
		{InstanceType: "m5.large", Zone: "us-west-2b", CapacityType: "on-demand"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("candidates\n  %v\nwant\n  %v", got, want)
	}
	unavailable := types["c5.large"]
	for i := range unavailable.Offerings {
		unavailable.Offerings[i].Available = unavailable.Offerings[i].Zone != "us-west-2a"
	}
	if c := n.Offerings(); c[0].Key().Zone != "us-west-2b" || c[0].Key().InstanceType != "c5.large" {
		t.Errorf("an unavailable offering was a candidate: %v", c[0].Key())
	}
}

func TestPlannedOntoOpenNodes(t *testing.T) {
	ready := builders.Node(builders.NodeOptions{Name: "ready", Allocatable: cpu("4"), Ready: corev1.ConditionTrue})
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{notReady},
		Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", v1alpha5.ProvisionerNameLabelKey: "default"}})
	snapshot := &state.Snapshot{Nodes: []corev1.Node{*ready, *launching}}
	pod := builders.Pod(builders.PodOptions{Name: "pending", Unschedulable: true})
	for _, tc := range []struct {
		name     string
		bindings []scheduling.Binding
		newNodes []*scheduling.NewNode
		want     bool
	}{
		{name: "no bindings", want: false},
		{name: "onto a launching node: its pod waits for it", bindings: []scheduling.Binding{{Pod: pod, NodeName: "launching"}}, want: false},
		{name: "onto a new node: launched for it", bindings: []scheduling.Binding{{Pod: pod, NodeName: "new-1"}},
			newNodes: []*scheduling.NewNode{{Hostname: "new-1"}}, want: false},
		{name: "onto an open node kube-scheduler refused: look again", bindings: []scheduling.Binding{{Pod: pod, NodeName: "launching"}, {Pod: pod, NodeName: "ready"}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plannedOntoOpenNodes(snapshot.LaunchingNodes(), &scheduling.Results{Bindings: tc.bindings, NewNodes: tc.newNodes}); got != tc.want {
				t.Errorf("plannedOntoOpenNodes = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRenominatable: a pod whose nomination kube-scheduler cleared is nominated again to a node
// that still awaits its pods or, Karpenter's, is not initialized yet (a startup taint on, a GPU
// not reported: kube-scheduler found no room there for now); to no other. The Ready node not
// initialized fails on the code before, which planned the pod anew and could launch for it.
func TestRenominatable(t *testing.T) {
	karpenters := map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", v1.NodeRegisteredLabelKey: "true"}
	initialized := map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", v1.NodeInitializedLabelKey: "true"}
	deleting := builders.Node(builders.NodeOptions{Labels: karpenters, Ready: corev1.ConditionTrue, Finalizers: []string{v1alpha5.TerminationFinalizer}})
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"launching", builders.Node(builders.NodeOptions{Labels: karpenters, Taints: []corev1.Taint{notReady}}), true},
		{"Ready, Karpenter's, not initialized", builders.Node(builders.NodeOptions{Labels: karpenters, Ready: corev1.ConditionTrue,
			Taints: []corev1.Taint{{Key: "example.com/network-not-ready", Effect: corev1.TaintEffectNoSchedule}}}), true},
		{"initialized", builders.Node(builders.NodeOptions{Labels: initialized, Ready: corev1.ConditionTrue}), false},
		{"not Karpenter's, Ready", builders.Node(builders.NodeOptions{Ready: corev1.ConditionTrue}), false},
		{"being deleted", deleting, false},
	} {
		if got := renominatable(tc.node); got != tc.want {
			t.Errorf("%s: renominatable = %v, want %v", tc.name, got, tc.want)
		}
	}
	snapshot := &state.Snapshot{Nodes: []corev1.Node{
		*builders.Node(builders.NodeOptions{Name: "setting-up", Labels: karpenters, Ready: corev1.ConditionTrue}),
		*builders.Node(builders.NodeOptions{Name: "initialized", Labels: initialized, Ready: corev1.ConditionTrue}),
	}}
	if got := snapshot.LaunchingNodes(); len(got) != 1 || got["setting-up"] != "default" {
		t.Errorf("launching nodes %v, want the one not initialized: the pods planned there are nominated", got)
	}
}
