package provisioning

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// cluster is what one pass reads, at now: every pod, node and DaemonSet, the claims, volumes
// and storage classes that keep pods to zones, and the instance types each Provisioner may
// launch, by instance type name.
type cluster struct {
	now           time.Time
	pods          []corev1.Pod
	nodes         []corev1.Node
	daemonSets    []appsv1.DaemonSet
	claims        []corev1.PersistentVolumeClaim
	volumes       []corev1.PersistentVolume
	classes       []storagev1.StorageClass
	instanceTypes map[string]*cloudprovider.InstanceType
}

// pending are the pods a new node would help, in a stable order.
func (c *cluster) pending() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range c.pods {
		if pods.IsProvisionable(&c.pods[i]) {
			out = append(out, &c.pods[i])
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// schedulingNodes are the nodes pods may still go to, with the pods bound to them. A node
// Karpenter launched that is not Ready yet is room already promised: its not-ready taints
// (Karpenter's, and those Kubernetes puts on every node until its kubelet reports Ready)
// only wait for the kubelet, so they are not taints pods must tolerate, and until the
// kubelet reports its allocatable the instance type's stands for it. Another node that has
// joined but is not Ready yet is room too while it is joining (see joining). Nodes being
// deleted take nothing.
func (c *cluster) schedulingNodes() []scheduling.Node {
	bound := map[string][]*corev1.Pod{}
	for i := range c.pods {
		pod := &c.pods[i]
		if pod.Spec.NodeName != "" && !pods.IsTerminal(pod) {
			bound[pod.Spec.NodeName] = append(bound[pod.Spec.NodeName], pod)
		}
	}
	var out []scheduling.Node
	for i := range c.nodes {
		node := &c.nodes[i]
		if node.DeletionTimestamp != nil {
			continue
		}
		if nodes.IsLaunching(node) {
			node = node.DeepCopy()
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return launchingTaints.Has(t.Key) })
			if len(node.Status.Allocatable) == 0 {
				if it, ok := c.instanceTypes[node.Labels[corev1.LabelInstanceTypeStable]]; ok {
					node.Status.Allocatable = it.Allocatable()
				}
			}
		} else if joining(node, c.now) {
			node = node.DeepCopy()
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		}
		out = append(out, scheduling.Node{Node: node, Pods: bound[node.Name]})
	}
	return out
}

// joiningGrace is how long after it joined a node Karpenter did not launch counts as room
// while Kubernetes still taints it not-ready: a node group's kubelet turns Ready within a
// minute or two of registering (its network plugin starting), and one that takes longer is
// probably broken, so the pods planned onto it are planned again, onto new nodes.
const joiningGrace = 5 * time.Minute

// joining is true for a node that registered less than joiningGrace ago and carries
// Kubernetes' standard not-ready taint, which only waits for its kubelet to report Ready. A
// node tainted unreachable has a kubelet that stopped (or never started) reporting: it is not
// coming, whatever its age.
func joining(node *corev1.Node, now time.Time) bool {
	if now.Sub(node.CreationTimestamp.Time) >= joiningGrace {
		return false
	}
	notReady := false
	for _, t := range node.Spec.Taints {
		switch t.Key {
		case corev1.TaintNodeUnreachable:
			return false
		case corev1.TaintNodeNotReady:
			notReady = true
		}
	}
	return notReady
}

// provisionerNodes is the capacity, by node name, of the nodes the provisioner launched:
// what its limits count.
func (c *cluster) provisionerNodes(provisioner string) map[string]corev1.ResourceList {
	return Counted(c.nodes, provisioner, c.instanceTypes)
}

// daemonSetPods stands one pod for each DaemonSet, as it would run on a new node: the
// scheduler reserves its requests on every new node it tolerates and selects.
func (c *cluster) daemonSetPods() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range c.daemonSets {
		out = append(out, pods.ForDaemonSet(&c.daemonSets[i]))
	}
	return out
}

// withVolumes gives the scheduler what it needs to keep pods with persistent volumes to their
// volumes' zones: without them, it refuses such pods as kube-scheduler would a missing claim.
func (c *cluster) withVolumes(input scheduling.Input) scheduling.Input {
	input.PersistentVolumeClaims = pointers(c.claims)
	input.PersistentVolumes = pointers(c.volumes)
	input.StorageClasses = pointers(c.classes)
	return input
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// launchingTaints are on a node Karpenter launched until its kubelet reports Ready and its
// batch has launched.
var launchingTaints = sets.New(v1alpha5.NotReadyTaintKey, v1alpha5.LaunchingTaintKey, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable)

// launchingNodes are the nodes still launching, with the provisioner that launched each.
func (c *cluster) launchingNodes() map[string]string {
	out := map[string]string{}
	for i := range c.nodes {
		if node := &c.nodes[i]; nodes.IsLaunching(node) {
			out[node.Name] = node.Labels[v1alpha5.ProvisionerNameLabelKey]
		}
	}
	return out
}
