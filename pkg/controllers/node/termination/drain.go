package termination

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// criticalPriorityClasses run the cluster's own machinery (DNS, CNI, metrics): they go last,
// once the workloads that need them have left the node.
var criticalPriorityClasses = []string{"system-cluster-critical", "system-node-critical"}

// Step is the next step of a node's drain.
type Step struct {
	// Evict are the pods to evict now, through the Eviction API.
	Evict []*corev1.Pod
	// Delete are the pods to delete now: the drain deadline has passed.
	Delete []*corev1.Pod
	// Blocking are the pods annotated do-not-evict that hold the whole drain.
	Blocking []*corev1.Pod
	// Drained is true when nothing the drain waits for remains on the node: its instance may
	// be terminated.
	Drained bool
}

// Plan is the next step of draining pods from a node. Pods that would come back or cannot be
// moved stay: DaemonSet pods, mirror pods, pods that have finished and pods that tolerate the
// cordon. A do-not-evict pod holds the drain before anything is evicted, so that a node that
// cannot go does not lose its other pods for nothing. Critical pods are evicted only once
// every other pod is gone. Past the deadline every remaining pod is deleted and the node is
// drained at once.
func Plan(podList []corev1.Pod, pastDeadline bool) Step {
	var step Step
	var terminating, critical, others []*corev1.Pod
	for i := range podList {
		pod := &podList[i]
		if !drains(pod) {
			continue
		}
		switch {
		case pastDeadline:
			if pod.DeletionTimestamp == nil {
				step.Delete = append(step.Delete, pod)
			}
		case pod.DeletionTimestamp != nil:
			terminating = append(terminating, pod)
		case pods.HasDoNotEvict(pod):
			step.Blocking = append(step.Blocking, pod)
		case isCritical(pod):
			critical = append(critical, pod)
		default:
			others = append(others, pod)
		}
	}
	switch {
	case pastDeadline:
		step.Drained = true
	case len(step.Blocking) > 0:
	case len(others) > 0:
		step.Evict = others
	case slices.ContainsFunc(terminating, func(p *corev1.Pod) bool { return !isCritical(p) }):
		// Critical pods wait until the last other pod has terminated.
	default:
		step.Evict = critical
		step.Drained = len(critical) == 0 && len(terminating) == 0
	}
	return step
}

// drains is true for a pod the drain moves off the node.
func drains(pod *corev1.Pod) bool {
	return !pods.IsOwnedByDaemonSet(pod) && !pods.IsMirror(pod) && !pods.IsTerminal(pod) && !toleratesCordon(pod)
}

// toleratesCordon is true for a pod that would be scheduled back onto the cordoned node.
func toleratesCordon(pod *corev1.Pod) bool {
	return scheduling.Tolerates(pod.Spec.Tolerations, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
}

func isCritical(pod *corev1.Pod) bool {
	return slices.Contains(criticalPriorityClasses, pod.Spec.PriorityClassName)
}
