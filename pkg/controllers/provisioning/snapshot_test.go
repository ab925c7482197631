package provisioning

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
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

func TestSchedulingNodes(t *testing.T) {
	dedicated := corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	ready := builders.Node(builders.NodeOptions{Name: "ready", Allocatable: cpu("4"), Ready: corev1.ConditionTrue})
	kubeNotReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{dedicated, notReady, kubeNotReady},
		Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", v1alpha5.ProvisionerNameLabelKey: "default"}})
	launching.Status = corev1.NodeStatus{}
	deleting := builders.Node(builders.NodeOptions{Name: "deleting", Allocatable: cpu("4")})
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{v1alpha5.TerminationFinalizer}
	c := &Snapshot{
		Nodes: []corev1.Node{*ready, *launching, *deleting},
		Pods: []corev1.Pod{
			*builders.Pod(builders.PodOptions{Name: "running", NodeName: "ready", Phase: corev1.PodRunning}),
			*builders.Pod(builders.PodOptions{Name: "done", NodeName: "ready", Phase: corev1.PodSucceeded}),
			*builders.Pod(builders.PodOptions{Name: "pending", Unschedulable: true}),
		},
		CSINodes:      []storagev1.CSINode{{ObjectMeta: metav1.ObjectMeta{Name: "ready"}}},
		InstanceTypes: catalogue(),
	}
	got := c.schedulingNodes()
	if len(got) != 2 || got[0].Node.Name != "ready" || got[1].Node.Name != "launching" {
		t.Fatalf("nodes %v, want ready and launching (a node being deleted takes nothing)", got)
	}
	if got[0].CSINode == nil || got[0].CSINode.Name != "ready" || got[1].CSINode != nil {
		t.Errorf("CSINodes %v, %v: want ready's own and none for launching (its attach limit is its instance type's)", got[0].CSINode, got[1].CSINode)
	}
	if len(got[0].Pods) != 1 || got[0].Pods[0].Name != "running" {
		t.Errorf("pods on ready: %v, want only the running one", got[0].Pods)
	}
	l := got[1].Node
	if !slices.Equal(l.Spec.Taints, []corev1.Taint{dedicated}) {
		t.Errorf("a launching node's taints %v, want the provisioner's without not-ready", l.Spec.Taints)
	}
	if want := catalogue()["m5.xlarge"].Allocatable(); !l.Status.Allocatable.Cpu().Equal(*want.Cpu()) || !l.Status.Allocatable.Memory().Equal(*want.Memory()) {
		t.Errorf("a launching node's allocatable %v, want its instance type's %v", l.Status.Allocatable, want)
	}
	if !slices.Contains(launching.Spec.Taints, notReady) {
		t.Error("the snapshot changed the node it read")
	}
	if pending := c.pending(); len(pending) != 1 || pending[0].Name != "pending" {
		t.Errorf("pending %v", pending)
	}
}

func TestJoining(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	kubeNotReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	kubeNotReadyExecute := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name   string
		age    time.Duration
		taints []corev1.Taint
		want   bool
	}{
		{name: "just registered, not ready", age: 10 * time.Second, taints: []corev1.Taint{kubeNotReady}, want: true},
		{name: "not ready with both effects and its own taint", age: time.Minute, taints: []corev1.Taint{dedicated, kubeNotReady, kubeNotReadyExecute}, want: true},
		{name: "just short of the grace", age: joiningGrace - time.Second, taints: []corev1.Taint{kubeNotReady}, want: true},
		{name: "not ready past the grace: broken, pods stop waiting", age: joiningGrace, taints: []corev1.Taint{kubeNotReady}, want: false},
		{name: "unreachable: its kubelet stopped reporting", age: 10 * time.Second, taints: []corev1.Taint{kubeNotReady, unreachable}, want: false},
		{name: "ready: no not-ready taint, already room as it is", age: 10 * time.Second, taints: []corev1.Taint{dedicated}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := builders.Node(builders.NodeOptions{Name: "joining", Taints: tc.taints})
			node.CreationTimestamp = metav1.NewTime(now.Add(-tc.age))
			if got := joining(node, now); got != tc.want {
				t.Errorf("joining = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestSchedulingNodesCountsJoiningNodes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	kubeNotReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	young := builders.Node(builders.NodeOptions{Name: "young", Allocatable: cpu("4"), Ready: corev1.ConditionFalse, Taints: []corev1.Taint{dedicated, kubeNotReady}})
	young.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	stale := builders.Node(builders.NodeOptions{Name: "stale", Allocatable: cpu("4"), Ready: corev1.ConditionFalse, Taints: []corev1.Taint{kubeNotReady}})
	stale.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	c := &Snapshot{Now: now, Nodes: []corev1.Node{*young, *stale}, InstanceTypes: catalogue()}
	got := c.schedulingNodes()
	if len(got) != 2 {
		t.Fatalf("nodes %v, want both", got)
	}
	if !slices.Equal(got[0].Node.Spec.Taints, []corev1.Taint{dedicated}) {
		t.Errorf("a joining node's taints %v, want its own without Kubernetes' not-ready", got[0].Node.Spec.Taints)
	}
	if !slices.Equal(got[1].Node.Spec.Taints, []corev1.Taint{kubeNotReady}) {
		t.Errorf("a node not ready past the grace has taints %v, want not-ready kept: it is no room", got[1].Node.Spec.Taints)
	}
	if !slices.Contains(young.Spec.Taints, kubeNotReady) {
		t.Error("the snapshot changed the node it read")
	}
}

func TestProvisionerNodes(t *testing.T) {
	reported := builders.Node(builders.NodeOptions{Name: "reported", Capacity: cpu("3"), Allocatable: cpu("3"),
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	unreported := builders.Node(builders.NodeOptions{Name: "unreported",
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	unreported.Status = corev1.NodeStatus{}
	other := builders.Node(builders.NodeOptions{Name: "other", Capacity: cpu("8"), Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "other"}})
	unmanaged := builders.Node(builders.NodeOptions{Name: "unmanaged", Capacity: cpu("8")})
	c := &Snapshot{Nodes: []corev1.Node{*reported, *unreported, *other, *unmanaged}, InstanceTypes: catalogue()}
	got := c.provisionerNodes("default")
	reportedCPU, unreportedCPU := got["reported"][corev1.ResourceCPU], got["unreported"][corev1.ResourceCPU]
	if len(got) != 2 || !reportedCPU.Equal(resource.MustParse("3")) || !unreportedCPU.Equal(resource.MustParse("4")) {
		t.Errorf("default's nodes %v, want reported at 3 cores (the kubelet's word) and unreported at its instance type's 4", got)
	}
}

// TestLaunchingNodesHoldTheirDaemonSets: a launching node holds a pod of each DaemonSet that
// will run there and has none there yet, so their requests and host ports are taken before
// the DaemonSet controller creates them; one whose pod is bound there counts once, and one
// that does not tolerate or select the node not at all.
func TestLaunchingNodesHoldTheirDaemonSets(t *testing.T) {
	daemonSet := func(name string, spec corev1.PodSpec) appsv1.DaemonSet {
		return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: "uid-" + types.UID(name)},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	}
	plain := builders.Pod(builders.PodOptions{Requests: cpu("100m")}).Spec
	selective := builders.Pod(builders.PodOptions{Requests: cpu("100m"), NodeSelector: map[string]string{"gpu": "true"}}).Spec
	exporter, agent, picky := daemonSet("exporter", plain), daemonSet("agent", plain), daemonSet("picky", selective)
	running := builders.Pod(builders.PodOptions{Name: "agent-abcde", Namespace: "kube-system", NodeName: "launching", Requests: cpu("100m")})
	running.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: agent.UID, Controller: ptr.To(true)}}
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{notReady},
		Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", v1alpha5.ProvisionerNameLabelKey: "default"}})
	launching.Status = corev1.NodeStatus{}
	ready := builders.Node(builders.NodeOptions{Name: "ready", Allocatable: cpu("4"), Ready: corev1.ConditionTrue})
	c := &Snapshot{
		Nodes:         []corev1.Node{*ready, *launching},
		Pods:          []corev1.Pod{*running},
		DaemonSets:    []appsv1.DaemonSet{exporter, agent, picky},
		InstanceTypes: catalogue(),
	}
	got := c.schedulingNodes()
	var names []string
	for _, pod := range got[1].Pods {
		names = append(names, pod.Name)
	}
	if want := []string{"agent-abcde", "exporter"}; !slices.Equal(names, want) {
		t.Errorf("pods on the launching node %v, want %v", names, want)
	}
	if len(got[0].Pods) != 0 {
		t.Errorf("pods on the ready node %v, want none: its DaemonSets' pods are there or not coming", got[0].Pods)
	}
}

func TestDaemonSetPods(t *testing.T) {
	ds := appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "logs"}},
			Spec:       builders.Pod(builders.PodOptions{Requests: cpu("100m")}).Spec,
		}},
	}
	got := (&Snapshot{DaemonSets: []appsv1.DaemonSet{ds}}).daemonSetPods()
	if len(got) != 1 || got[0].Namespace != "kube-system" || got[0].Labels["app"] != "logs" || !got[0].Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("100m")) {
		t.Errorf("daemonset pods %v", got)
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
	for _, c := range Candidates(n) {
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
	if c := Candidates(n); c[0].Key().Zone != "us-west-2b" || c[0].Key().InstanceType != "c5.large" {
		t.Errorf("an unavailable offering was a candidate: %v", c[0].Key())
	}
}

func TestNodeFor(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Labels: map[string]string{"team": "ml"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}})
	it := catalogue()["m6g.large"]
	instance := &cloudprovider.Instance{ProviderID: "fake:///us-west-2b/i-1", ID: "i-1", InstanceType: "m6g.large", Zone: "us-west-2b",
		CapacityType: v1alpha5.CapacityTypeSpot, NodeName: "ip-10-0-0-1.us-west-2.compute.internal"}
	node := NodeFor(instance, p, it)
	for key, want := range map[string]string{
		"team":                           "ml",
		v1alpha5.ProvisionerNameLabelKey: "default",
		corev1.LabelTopologyZone:         "us-west-2b",
		corev1.LabelInstanceTypeStable:   "m6g.large",
		v1alpha5.CapacityTypeLabelKey:    "spot",
		corev1.LabelArchStable:           "arm64",
		corev1.LabelOSStable:             "linux",
		corev1.LabelHostname:             instance.NodeName,
	} {
		if node.Labels[key] != want {
			t.Errorf("label %s = %q, want %q", key, node.Labels[key], want)
		}
	}
	if node.Name != instance.NodeName || node.Spec.ProviderID != instance.ProviderID {
		t.Errorf("node %s %s, want the instance's name and provider id", node.Name, node.Spec.ProviderID)
	}
	if !slices.Equal(node.Spec.Taints, append(slices.Clone(p.Spec.Taints), notReady)) {
		t.Errorf("taints %v, want the provisioner's and not-ready", node.Spec.Taints)
	}
	if !slices.Equal(node.Finalizers, []string{v1alpha5.TerminationFinalizer}) {
		t.Errorf("finalizers %v", node.Finalizers)
	}
	if again := NodeFor(instance, p, it); again.Name != node.Name || again.Spec.ProviderID != node.Spec.ProviderID {
		t.Error("the same instance gave another node")
	}
}

func TestPlannedOntoOpenNodes(t *testing.T) {
	ready := builders.Node(builders.NodeOptions{Name: "ready", Allocatable: cpu("4"), Ready: corev1.ConditionTrue})
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{notReady},
		Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", v1alpha5.ProvisionerNameLabelKey: "default"}})
	snapshot := &Snapshot{Nodes: []corev1.Node{*ready, *launching}}
	pod := builders.Pod(builders.PodOptions{Name: "pending", Unschedulable: true})
	for _, tc := range []struct {
		name     string
		bindings []scheduling.Binding
		want     bool
	}{
		{name: "no bindings", want: false},
		{name: "onto a launching node: its pod waits for it", bindings: []scheduling.Binding{{Pod: pod, NodeName: "launching"}}, want: false},
		{name: "onto an open node kube-scheduler refused: look again", bindings: []scheduling.Binding{{Pod: pod, NodeName: "launching"}, {Pod: pod, NodeName: "ready"}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plannedOntoOpenNodes(snapshot.LaunchingNodes(), &scheduling.Results{Bindings: tc.bindings}); got != tc.want {
				t.Errorf("plannedOntoOpenNodes = %v, want %v", got, tc.want)
			}
		})
	}
}
