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
// full node, until kube-scheduler next retries it on its own (up to five minutes).
//
// A pod's room is what kube-scheduler gives it: the node's allocatable less what the pods bound
// there request and what the pods nominated there of its priority or higher request. Of the
// pods of nominated on one node, the higher priority, then the older, keeps its room; another's
// nomination (a preemptor's) of equal priority counts before them, as it is not ours to move.
// Only the resources a pod requests (and the one pod it is) are compared.
//
// unbound is how many of nominated wait, unbound, on such a node: kube-scheduler binds them at
// its next attempt, unless a pod it binds first takes the room. The pods nominated to a node
// Karpenter launched that is not yet initialized count there, and are never displaced: until its
// resources are all reported, its room is not known.
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
	// ours is whether the pod, unbound (pods.NominatedNode), is one of nominated there.
	ours := func(pod *corev1.Pod, node string) bool { return nominated[pod.UID] == node }
	// Only the nodes one of ours is nominated to are counted.
	judged := map[string]bool{}
	for i := range c.Pods {
		pod := &c.Pods[i]
		node := pods.NominatedNode(pod)
		if _, ok := serving[node]; !ok || !ours(pod, node) {
			continue
		}
		if !nodes.IsInitialized(serving[node]) {
			unbound++
			continue
		}
		judged[node] = true
	}
	used := map[string]corev1.ResourceList{}
	queued := map[string][]*corev1.Pod{}
	for i := range c.Pods {
		pod := &c.Pods[i]
		if pods.IsTerminal(pod) {
			continue
		}
		if node := pod.Spec.NodeName; node != "" {
			if judged[node] {
				used[node] = plusPod(used[node], pod)
			}
			continue
		}
		if node := pods.NominatedNode(pod); judged[node] {
			queued[node] = append(queued[node], pod)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(judged)) {
		queue := queued[name]
		slices.SortFunc(queue, func(a, b *corev1.Pod) int {
			return cmp.Or(-cmp.Compare(corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)),
				compareBool(ours(a, name), ours(b, name)),
				a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		allocatable := serving[name].Status.Allocatable
		for _, pod := range queue {
			with := plusPod(used[name], pod)
			if !ours(pod, name) {
				used[name] = with
				continue
			}
			if !fits(pod, with, allocatable) {
				displaced = append(displaced, pod)
				continue
			}
			used[name] = with
			unbound++
		}
	}
	return displaced, unbound
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// plusPod is used with the pod's requests, and the one pod it is, added.
func plusPod(used corev1.ResourceList, pod *corev1.Pod) corev1.ResourceList {
	out := used.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, quantity := range requestsWithPod(pod) {
		sum := out[name]
		sum.Add(quantity)
		out[name] = sum
	}
	return out
}

// requestsWithPod are the pod's requests and the one pod it is.
func requestsWithPod(pod *corev1.Pod) corev1.ResourceList {
	requests := pods.Requests(pod)
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return requests
}

// fits is whether each resource the pod requests is, used with it, at most what is allocatable.
func fits(pod *corev1.Pod, used, allocatable corev1.ResourceList) bool {
	for name, requested := range requestsWithPod(pod) {
		if requested.IsZero() {
			continue
		}
		total := used[name]
		if available, ok := allocatable[name]; !ok || total.Cmp(available) > 0 {
			return false
		}
	}
	return true
}
