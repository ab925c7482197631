package provisioning

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	pkgscheduling "karpenter.sh/karpenter/pkg/scheduling"
)

// Snapshot is what one pass reads, at Now: every pod, node and DaemonSet, the claims, volumes
// and storage classes that keep pods to zones, and the instance types each Provisioner may
// launch, by instance type name.
type Snapshot struct {
	Now        time.Time
	Pods       []corev1.Pod
	Nodes      []corev1.Node
	DaemonSets []appsv1.DaemonSet
	Claims     []corev1.PersistentVolumeClaim
	Volumes    []corev1.PersistentVolume
	Classes    []storagev1.StorageClass
	// CSINodes say, per existing node, how many volumes each CSI driver attaches there.
	CSINodes      []storagev1.CSINode
	InstanceTypes map[string]*cloudprovider.InstanceType
}

// pending are the pods a new node would help, in a stable order: those kube-scheduler found
// no room for, and those nominated to a node that is gone or going (nominationLapsed).
func (c *Snapshot) pending() []*corev1.Pod {
	standing := c.StandingNodes()
	var out []*corev1.Pod
	for i := range c.Pods {
		if pod := &c.Pods[i]; pods.IsProvisionable(pod) || nominationLapsed(pod, standing) {
			out = append(out, pod)
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
// deleted take nothing. A pod nominated to a node takes its room there, as kube-scheduler
// counts it (see nominate.go). A launching node also holds the pods of the DaemonSets that
// will run there and have none there yet (their controller creates them once the Node exists):
// their requests and host ports are taken, as on a new node.
func (c *Snapshot) schedulingNodes() []scheduling.Node {
	bound := map[string][]*corev1.Pod{}
	for i := range c.Pods {
		pod := &c.Pods[i]
		if pod.Spec.NodeName != "" && !pods.IsTerminal(pod) {
			bound[pod.Spec.NodeName] = append(bound[pod.Spec.NodeName], pod)
		} else if node := NominatedNode(pod); node != "" {
			bound[node] = append(bound[node], pod)
		}
	}
	csiNodes := c.CSINodesByName()
	var daemonPods []*corev1.Pod // by DaemonSet, built for the first launching node
	var out []scheduling.Node
	for i := range c.Nodes {
		node := &c.Nodes[i]
		if node.DeletionTimestamp != nil {
			continue
		}
		onNode := bound[node.Name]
		if nodes.IsLaunching(node) {
			node = node.DeepCopy()
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return launchingTaints.Has(t.Key) })
			if len(node.Status.Allocatable) == 0 {
				if it, ok := c.InstanceTypes[node.Labels[corev1.LabelInstanceTypeStable]]; ok {
					node.Status.Allocatable = it.Allocatable()
				}
			}
			if daemonPods == nil {
				daemonPods = c.daemonSetPods()
			}
			onNode = c.withDaemonSetsToCome(node, onNode, daemonPods)
		} else if joining(node, c.Now) {
			node = node.DeepCopy()
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		}
		out = append(out, scheduling.Node{Node: node, Pods: onNode, CSINode: csiNodes[node.Name]})
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
func (c *Snapshot) provisionerNodes(provisioner string) map[string]corev1.ResourceList {
	return Counted(c.Nodes, provisioner, c.InstanceTypes)
}

// withDaemonSetsToCome adds to a launching node's pods the pod (daemonPods, by DaemonSet) of
// each DaemonSet that tolerates and selects the node and has no pod bound there yet.
func (c *Snapshot) withDaemonSetsToCome(node *corev1.Node, onNode, daemonPods []*corev1.Pod) []*corev1.Pod {
	out := onNode
	for i, pod := range daemonPods {
		ds := &c.DaemonSets[i]
		if slices.ContainsFunc(onNode, func(pod *corev1.Pod) bool { return metav1.IsControlledBy(pod, ds) }) ||
			pkgscheduling.UntoleratedTaint(pod.Spec.Tolerations, node.Spec.Taints) != nil || pkgscheduling.CheckNodeAffinity(pod, node.Labels) != nil {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// daemonSetPods stands one pod for each DaemonSet, as it would run on a new node: the
// scheduler reserves its requests on every new node it tolerates and selects.
func (c *Snapshot) daemonSetPods() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range c.DaemonSets {
		out = append(out, pods.ForDaemonSet(&c.DaemonSets[i]))
	}
	return out
}

// CSINodesByName are the CSINodes by the name of their node.
func (c *Snapshot) CSINodesByName() map[string]*storagev1.CSINode {
	out := make(map[string]*storagev1.CSINode, len(c.CSINodes))
	for i := range c.CSINodes {
		out[c.CSINodes[i].Name] = &c.CSINodes[i]
	}
	return out
}

// WithVolumes gives the scheduler what it needs to keep pods with persistent volumes to their
// volumes' zones: without them, it refuses such pods as kube-scheduler would a missing claim.
func (c *Snapshot) WithVolumes(input scheduling.Input) scheduling.Input {
	input.PersistentVolumeClaims = pointers(c.Claims)
	input.PersistentVolumes = pointers(c.Volumes)
	input.StorageClasses = pointers(c.Classes)
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

// LaunchingNodes are the nodes still launching, with the provisioner that launched each.
func (c *Snapshot) LaunchingNodes() map[string]string {
	out := map[string]string{}
	for i := range c.Nodes {
		if node := &c.Nodes[i]; nodes.IsLaunching(node) {
			out[node.Name] = node.Labels[v1alpha5.ProvisionerNameLabelKey]
		}
	}
	return out
}
