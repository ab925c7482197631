// Package pods holds what Karpenter asks of a pod: whether it waits for a node, has finished,
// belongs to a DaemonSet or a node's static manifests, needs room elsewhere when its node
// goes, holds its node, is evicted by a drain, and what it requests. Each question has one
// predicate here, which every loop that asks it uses. It is pure: every predicate reads only
// the pod it is given.
package pods

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"karpenter.sh/karpenter/pkg/scheduling"
)

// DoNotEvictAnnotationKey set to "true" asks Karpenter not to evict the pod, and so not to
// remove its node.
const DoNotEvictAnnotationKey = "karpenter.sh/do-not-evict"

// IsUnschedulable is true for a pod the scheduler has tried and failed to place, that still
// wants a node. A pod nominated to a node is not: it runs there once the pods it preempts are
// gone.
func IsUnschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" || pod.DeletionTimestamp != nil || IsTerminal(pod) {
		return false
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled {
			return condition.Status == corev1.ConditionFalse && condition.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// NominatedNode is the node an unbound pod still waiting to be placed is nominated to, ""
// when none: kube-scheduler nominates a pod to the node it preempts for, Karpenter to the node
// it launched for the pod. The pod runs there once the node has room for it, so the node
// awaits it as it would a bound pod.
func NominatedNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || IsTerminal(pod) {
		return ""
	}
	return pod.Status.NominatedNodeName
}

// IsProvisionable is true for an unschedulable pod that a new node would help: a DaemonSet's
// pod is placed by its controller on every node, new ones included, and a mirror pod is run
// by its node's kubelet, so no new node is ever launched for either.
func IsProvisionable(pod *corev1.Pod) bool {
	return IsUnschedulable(pod) && !IsOwnedByDaemonSet(pod) && !IsMirror(pod)
}

// IsTerminal is true for a pod whose containers have all stopped for good: it holds no
// resources on its node any more.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsOwnedByDaemonSet is true for a pod a DaemonSet controls, which runs on every node it
// selects, new ones included.
func IsOwnedByDaemonSet(pod *corev1.Pod) bool {
	for _, owner := range pod.OwnerReferences {
		if owner.Kind == "DaemonSet" && owner.Controller != nil && *owner.Controller {
			return true
		}
	}
	return false
}

// IsMirror is true for the API server's mirror of a static pod, which the kubelet runs from a
// manifest on its node: deleting the mirror does not stop the pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// ClaimNames are the names of the PersistentVolumeClaims the pod's volumes use, in its
// namespace: those it names, and those of its generic ephemeral volumes, which their
// controller names after the pod and the volume.
func ClaimNames(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, pod.Name+"-"+v.Name)
		}
	}
	return out
}

// IsMovable is true for a pod that needs room on another node when its node goes: DaemonSet
// pods go with the node, mirror pods belong to it and finished pods run nothing. Every loop
// that removes a node asks this one question: expiry and consolidation find room for these
// pods first, emptiness waits until none is left, and the drain evicts them.
func IsMovable(pod *corev1.Pod) bool {
	return !IsTerminal(pod) && !IsOwnedByDaemonSet(pod) && !IsMirror(pod)
}

// HoldsNode is true for a movable pod annotated do-not-evict that is not already being
// deleted: nothing removes its node while it is there, short of a Provisioner's drain
// deadline, whether the drain would evict the pod or leave it to go with the instance (a pod
// that tolerates the cordon).
func HoldsNode(pod *corev1.Pod) bool {
	return IsMovable(pod) && pod.DeletionTimestamp == nil && pod.Annotations[DoNotEvictAnnotationKey] == "true"
}

// IsEvictedByDrain is true for a movable pod the drain of its node evicts and waits for. keepOff
// is the taint that keeps pods off the node while it drains — the cordon's on a Provisioner's
// node, karpenter.sh/disrupted on a NodePool's, as upstream's v1 — and a pod that tolerates it is
// left on the node: evicted, it could be scheduled straight back, so it goes with the instance.
func IsEvictedByDrain(pod *corev1.Pod, keepOff corev1.Taint) bool {
	return IsMovable(pod) && !scheduling.Tolerates(pod.Spec.Tolerations, &keepOff)
}

// CordonTaint is the taint a cordoned node carries (the node lifecycle controller's for
// spec.unschedulable).
var CordonTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// Requests is what the scheduler reserves on a node for pod, resource by resource: the larger
// of what its long-running containers (including sidecars) request together and what the most
// demanding step of its initialization requests, with pod-level requests replacing the
// containers' aggregate where set, plus the pod's overhead. It is kube-scheduler's own
// computation, so Karpenter never disagrees with the scheduler about what fits. The pods
// resource is not included: every pod takes exactly one.
func Requests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// Limits are the pod's resource limits as kube-scheduler's helpers compute them (init
// containers, sidecars and pod-level limits included); a resource without a limit is absent.
func Limits(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
}

// ForDaemonSet stands for the pod the DaemonSet would run on a new node, named after it: what
// the scheduler reserves on every new node the pod tolerates and selects.
func ForDaemonSet(ds *appsv1.DaemonSet) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Namespace, pod.Name = ds.Namespace, ds.Name
	return pod
}

// HostPorts are the ports the pod binds on its node, as kube-scheduler's NodePorts filter
// reads them: those with a host port of its containers and of its sidecars (init containers
// that restart always, and so run as long as the pod). On the host's network every container
// port is a host port: the API server defaults hostPort to it on a pod, but not on a pod
// template since Kubernetes 1.28, so a pod built from a DaemonSet's template has none set.
func HostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort == 0 && pod.Spec.HostNetwork {
				p.HostPort = p.ContainerPort
			}
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// Unbound are copies of the pods as the scheduler places them again when their node goes:
// bound to no node.
func Unbound(bound []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(bound))
	for _, pod := range bound {
		pending := pod.DeepCopy()
		pending.Spec.NodeName = ""
		out = append(out, pending)
	}
	return out
}
