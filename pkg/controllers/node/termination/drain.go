package termination

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/pods"
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
	// Blocking are the pods annotated do-not-evict that hold the whole drain (pods.HoldsNode).
	Blocking []*corev1.Pod
	// Drained is true when nothing the drain waits for remains on the node: its instance may
	// be terminated.
	Drained bool
	// Recheck, when not zero, is when the grace period of a pod terminating on a node that is
	// not Ready runs out: no kubelet may confirm its end, so the drain then stops waiting.
	Recheck time.Time
}

// Drain is the node's side of a drain's next step.
type Drain struct {
	// PastDeadline is true once the Provisioner's drain deadline has passed.
	PastDeadline bool
	// NodeReady is true while the node's kubelet reports Ready: only then does a pod being
	// deleted there end once its containers have stopped.
	NodeReady bool
	Now       time.Time
}

// Plan is the next step of draining pods from a node. Pods that would come back or cannot be
// moved stay: DaemonSet pods, mirror pods, pods that have finished and pods that tolerate the
// cordon. A do-not-evict pod, one that tolerates the cordon included, holds the drain before
// anything is evicted, so that a node that cannot go does not lose its other pods for nothing.
// Critical pods are evicted only once every other pod is gone. Past the deadline every
// remaining pod the drain waits for is deleted and the node is drained at once. On a node that
// is not Ready (or never was) a terminating pod is waited for until its grace period runs
// out and no longer: no kubelet confirms its end there, and the instance's termination ends
// whatever still runs.
func Plan(podList []corev1.Pod, drain Drain) Step {
	var step Step
	var terminating, critical, others []*corev1.Pod
	for i := range podList {
		pod := &podList[i]
		holds := pods.HoldsNode(pod)
		if !holds && !pods.IsEvictedByDrain(pod) {
			continue
		}
		switch {
		case drain.PastDeadline:
			if pod.DeletionTimestamp == nil {
				step.Delete = append(step.Delete, pod)
			}
		case holds:
			step.Blocking = append(step.Blocking, pod)
		case pod.DeletionTimestamp != nil:
			// The API server sets a pod's deletion timestamp to when its grace period ends.
			if !drain.NodeReady {
				if !drain.Now.Before(pod.DeletionTimestamp.Time) {
					continue
				}
				if step.Recheck.IsZero() || pod.DeletionTimestamp.Time.Before(step.Recheck) {
					step.Recheck = pod.DeletionTimestamp.Time
				}
			}
			terminating = append(terminating, pod)
		case isCritical(pod):
			critical = append(critical, pod)
		default:
			others = append(others, pod)
		}
	}
	switch {
	case drain.PastDeadline:
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

func isCritical(pod *corev1.Pod) bool {
	return slices.Contains(criticalPriorityClasses, pod.Spec.PriorityClassName)
}
