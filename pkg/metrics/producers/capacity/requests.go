package capacity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// EffectiveRequests is what the scheduler reserves on a node for pod, resource by resource:
// the larger of what its long-running containers (including sidecars) request together and
// what the most demanding step of its initialization requests, with pod-level requests
// replacing the containers' aggregate where set, plus the pod's overhead. It is kube-scheduler's
// own computation, so Karpenter never disagrees with the scheduler about what fits. The pods
// resource is not included: every pod takes exactly one.
func EffectiveRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// IsTerminal is true for a pod whose containers have all stopped for good: it holds no
// resources on its node any more.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsReady is true for a node whose kubelet reports Ready.
func IsReady(node *corev1.Node) bool {
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}

// quantityOf returns the quantity of name in list, zero when absent.
func quantityOf(list corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
	if quantity, ok := list[name]; ok {
		return quantity
	}
	return resource.Quantity{}
}
