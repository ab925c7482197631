package state

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
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
	got := c.Room()
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
	if pending := c.Pending(); len(pending) != 1 || pending[0].Name != "pending" {
		t.Errorf("pending %v", pending)
	}
}

// TestNodesSettingUpAreRoomToCome: a node Karpenter launched that is not initialized yet is
// room as it will be once set up. Its NodeClaim's startup taints, the cloud controller manager's
// uninitialized taint and the Node Readiness Controller's are not taints pods must tolerate
// (something lifts each once the node is set up): seen as taints, the node was no room, and
// every pass launched another node for the pods waiting (fifty in 90 s in a test whose startup
// taint stayed). The NodeClaim is found by provider ID, so a node its NodeClaim has not named yet
// (launching, or registering) counts so too. What the kubelet has not reported allocatable yet (a
// GPU before its device plugin starts) is what the NodeClaim promises. Initialized, or not
// Karpenter's, a node is taken as it is. Every case but the last two fails on the code before.
func TestNodesSettingUpAreRoomToCome(t *testing.T) {
	cni := corev1.Taint{Key: "example.com/network-not-ready", Effect: corev1.TaintEffectNoSchedule}
	ccm := corev1.Taint{Key: nodes.CloudProviderUninitializedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	readiness := corev1.Taint{Key: "readiness.k8s.io/NetworkReady", Value: "pending", Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	gpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")}
	claim := func(name, nodeName string) v1.NodeClaim {
		return v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
			Spec:   v1.NodeClaimSpec{StartupTaints: []v1.Taint{{Key: cni.Key, Effect: cni.Effect}}, Taints: []v1.Taint{{Key: dedicated.Key, Value: dedicated.Value, Effect: dedicated.Effect}}},
			Status: v1.NodeClaimStatus{NodeName: nodeName, ProviderID: "aws:///us-west-2a/i-" + name, Allocatable: gpu}}
	}
	node := func(name string, labels map[string]string, taints ...corev1.Taint) corev1.Node {
		n := builders.Node(builders.NodeOptions{Name: name, Labels: labels, Allocatable: cpu("4"), Ready: corev1.ConditionTrue, Taints: taints})
		n.Spec.ProviderID = "aws:///us-west-2a/i-" + name
		return *n
	}
	managed := map[string]string{v1.NodePoolLabelKey: "default", v1.NodeRegisteredLabelKey: "true"}
	initialized := map[string]string{v1.NodePoolLabelKey: "default", v1.NodeRegisteredLabelKey: "true", v1.NodeInitializedLabelKey: "true"}
	for _, tc := range []struct {
		name            string
		node            *corev1.Node
		claim           v1.NodeClaim
		wantTaints      []corev1.Taint
		wantAllocatable corev1.ResourceList
	}{
		{name: "registered, its startup taint and both setup taints on", node: ptr.To(node("n", managed, dedicated, cni, ccm, readiness)), claim: claim("n", "n"),
			wantTaints: []corev1.Taint{dedicated}, wantAllocatable: gpu},
		{name: "registered, its NodeClaim's status not naming it yet", node: ptr.To(node("n", managed, dedicated, cni)), claim: claim("n", ""),
			wantTaints: []corev1.Taint{dedicated}, wantAllocatable: gpu},
		{name: "registering: the kubelet's node, not yet synced", node: ptr.To(node("n", map[string]string{v1.NodePoolLabelKey: "default"}, nodeclaims.UnregisteredTaint)), claim: claim("n", ""),
			wantTaints: []corev1.Taint{dedicated}, wantAllocatable: gpu},
		{name: "launched, no node yet: the NodeClaim stands for it", claim: claim("n", ""),
			wantTaints: []corev1.Taint{dedicated}, wantAllocatable: gpu},
		{name: "initialized: a taint put back is one to tolerate", node: ptr.To(node("n", initialized, dedicated, cni)), claim: claim("n", "n"),
			wantTaints: []corev1.Taint{dedicated, cni}, wantAllocatable: cpu("4")},
		{name: "not Karpenter's", node: ptr.To(node("n", nil, dedicated, cni, ccm)), claim: claim("other", "other"),
			wantTaints: []corev1.Taint{dedicated, cni, ccm}, wantAllocatable: cpu("4")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Snapshot{NodeClaims: []v1.NodeClaim{tc.claim}}
			if tc.node != nil {
				c.Nodes = []corev1.Node{*tc.node}
			}
			room := c.Room()
			if len(room) != 1 {
				t.Fatalf("room %v, want one node", room)
			}
			got := room[0].Node
			if !slices.Equal(got.Spec.Taints, tc.wantTaints) {
				t.Errorf("taints %v, want %v", got.Spec.Taints, tc.wantTaints)
			}
			if !equality.Semantic.DeepEqual(got.Status.Allocatable, tc.wantAllocatable) {
				t.Errorf("allocatable %v, want %v", got.Status.Allocatable, tc.wantAllocatable)
			}
			if tc.node != nil && !equality.Semantic.DeepEqual(c.Nodes[0], *tc.node) {
				t.Error("the snapshot changed the node it read")
			}
		})
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
	got := c.Room()
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
	got := c.Room()
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
	got := (&Snapshot{DaemonSets: []appsv1.DaemonSet{ds}}).DaemonSetPods()
	if len(got) != 1 || got[0].Namespace != "kube-system" || got[0].Labels["app"] != "logs" || !got[0].Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("100m")) {
		t.Errorf("daemonset pods %v", got)
	}
}

func cpu(cores string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cores)}
}
