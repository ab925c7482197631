package capacity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EffectiveRequests is what the scheduler reserves on a node for pod, resource by resource:
// the larger of what its long-running containers request together and what the most
// demanding step of its initialization requests, plus the pod's overhead.
//
// Long-running containers are the app containers and the sidecars (init containers with
// restartPolicy Always). An init step is a regular init container together with the sidecars
// started before it, which keep running while it does. Pod-level requests, where set, replace
// the containers' aggregate for their resources, as the scheduler does. The pods resource is
// not included: every pod takes exactly one.
func EffectiveRequests(pod *corev1.Pod) corev1.ResourceList {
	running := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(running, pod.Spec.Containers[i].Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		container := &pod.Spec.InitContainers[i]
		if isSidecar(container) {
			add(sidecars, container.Resources.Requests)
			raiseTo(initPeak, sidecars)
			continue
		}
		step := sidecars.DeepCopy()
		add(step, container.Resources.Requests)
		raiseTo(initPeak, step)
	}
	add(running, sidecars)
	raiseTo(running, initPeak)
	if pod.Spec.Resources != nil {
		for name, quantity := range pod.Spec.Resources.Requests {
			running[name] = quantity.DeepCopy()
		}
	}
	add(running, pod.Spec.Overhead)
	return running
}

func isSidecar(container *corev1.Container) bool {
	return container.RestartPolicy != nil && *container.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// add adds every quantity of more to total.
func add(total, more corev1.ResourceList) {
	for name, quantity := range more {
		sum := total[name]
		sum.Add(quantity)
		total[name] = sum
	}
}

// raiseTo raises every quantity of total to at least the one in floor.
func raiseTo(total, floor corev1.ResourceList) {
	for name, quantity := range floor {
		if current, ok := total[name]; !ok || current.Cmp(quantity) < 0 {
			total[name] = quantity.DeepCopy()
		}
	}
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
