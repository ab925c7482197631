package provisioning

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// cluster is what one pass reads: every pod, node and DaemonSet, and the instance types
// each Provisioner may launch, by instance type name.
type cluster struct {
	pods          []corev1.Pod
	nodes         []corev1.Node
	daemonSets    []appsv1.DaemonSet
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
// kubelet reports its allocatable the instance type's stands for it. Nodes being deleted
// take nothing.
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
		}
		out = append(out, scheduling.Node{Node: node, Pods: bound[node.Name]})
	}
	return out
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

// launchingTaints are on a node Karpenter launched until its kubelet reports Ready.
var launchingTaints = sets.New(v1alpha5.NotReadyTaintKey, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable)

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
