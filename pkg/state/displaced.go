package state

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// DisplacedNominations are the pods of nominated (each by UID, with the node it was nominated
// to) still nominated there, unbound, whose node no longer awaits its pods and has no room
// left for them. kube-scheduler clears a nomination at every failed attempt, so a pod nominated
// again to its launching node may lose the node's room to another pod while the nomination is
// away; nominated again after kube-scheduler's last attempt, it would then wait, counted on a
// full node, until kube-scheduler next retries it on its own (up to five minutes). The room is
// the node's allocatable less what the pods bound there request, and the pods nominated there
// ahead of it: others' nominations (a preemptor's) first, then these by priority, creation and
// name, as kube-scheduler counts the nominated pods of higher or equal priority. unbound is
// how many of nominated wait, unbound, on such a node that has room for them: kube-scheduler
// binds them at its next attempt, unless a pod it binds first takes the room.
func (c *Snapshot) DisplacedNominations(nominated map[types.UID]string) (displaced []*corev1.Pod, unbound int) {
	if len(nominated) == 0 {
		return nil, 0
	}
	serving := map[string]*corev1.Node{}
	for i := range c.Nodes {
		if node := &c.Nodes[i]; node.DeletionTimestamp == nil && !nodes.AwaitsItsPods(node) {
			serving[node.Name] = node
		}
	}
	// Only the nodes one of ours is nominated to are counted.
	candidates := map[string][]*corev1.Pod{}
	for i := range c.Pods {
		pod := &c.Pods[i]
		node := pods.NominatedNode(pod)
		if _, ok := serving[node]; ok && nominated[pod.UID] == node {
			candidates[node] = append(candidates[node], pod)
		}
	}
	if len(candidates) == 0 {
		return nil, 0
	}
	used := map[string]corev1.ResourceList{}
	for i := range c.Pods {
		pod := &c.Pods[i]
		node := pod.Spec.NodeName
		if node == "" || pods.IsTerminal(pod) {
			if node = pods.NominatedNode(pod); node == "" || nominated[pod.UID] == node {
				continue
			}
		}
		if _, ok := candidates[node]; ok {
			used[node] = addPod(used[node], pod)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(candidates)) {
		waiting := candidates[name]
		slices.SortFunc(waiting, func(a, b *corev1.Pod) int {
			return cmp.Or(-cmp.Compare(corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)),
				a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		allocatable := serving[name].Status.Allocatable
		for _, pod := range waiting {
			with := addPod(used[name], pod)
			if !within(with, allocatable) {
				displaced = append(displaced, pod)
				continue
			}
			used[name] = with
			unbound++
		}
	}
	return displaced, unbound
}

// addPod is used with the pod's requests, and the one pod it is, added.
func addPod(used corev1.ResourceList, pod *corev1.Pod) corev1.ResourceList {
	out := used.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	requests := pods.Requests(pod)
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for name, quantity := range requests {
		sum := out[name]
		sum.Add(quantity)
		out[name] = sum
	}
	return out
}

// within is whether each resource used, requested at all, is at most what is allocatable.
func within(used, allocatable corev1.ResourceList) bool {
	for name, quantity := range used {
		if quantity.IsZero() {
			continue
		}
		if available, ok := allocatable[name]; !ok || quantity.Cmp(available) > 0 {
			return false
		}
	}
	return true
}
