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
	// Delete are the pods to delete now: the drain deadline has passed, or comes within their
	// own terminationGracePeriodSeconds (deleted with what is left of it, expiring).
	Delete []*corev1.Pod
	// Blocking are the pods annotated do-not-evict that hold the whole drain (pods.HoldsNode).
	Blocking []*corev1.Pod
	// Kept are the pods annotated karpenter.sh/do-not-disrupt, when the drain keeps them
	// (Drain.KeepDoNotDisrupt): never evicted, waited for until they finish or the deadline
	// passes, as upstream keeps them; the other pods are evicted.
	Kept []*corev1.Pod
	// Drained is true when nothing the drain waits for remains on the node: its instance may
	// be terminated.
	Drained bool
	// Recheck, when not zero, is when the drain stops waiting for a pod that is terminating
	// (stuckAfter) or stops keeping one whose do-not-disrupt was a duration.
	Recheck time.Time
}

// Drain is the node's side of a drain's next step.
type Drain struct {
	// Deadline is when the drain gives up evicting (its NodeClaim's terminationGracePeriod, or
	// its Provisioner's); zero for none.
	Deadline time.Time
	// NodeReady is true while the node's kubelet reports Ready: only then does a pod being
	// deleted there end once its containers have stopped.
	NodeReady bool
	// KeepOff is the taint that keeps pods off the node while it drains (pods.IsEvictedByDrain):
	// the cordon's when zero.
	KeepOff corev1.Taint
	// KeepDoNotDisrupt keeps the pods annotated karpenter.sh/do-not-disrupt (Step.Kept): on a
	// NodePool's node, as upstream's v1 drains, unless it is interrupted (its instance goes
	// anyway).
	KeepDoNotDisrupt bool
	Now              time.Time
}

// stuckAfter is how long past the end of its grace period a terminating pod on a Ready node is
// still waited for: its kubelet should have confirmed its end by then, and one that has not
// (a hung runtime, a volume that will not unmount) would hold the node for ever, as upstream
// gives up on a pod stuck terminating after a minute. On a node that is not Ready no kubelet
// confirms anything, and the drain stops waiting when the grace period ends.
const stuckAfter = time.Minute

// Plan is the next step of draining pods from a node. Pods that would come back or cannot be
// moved stay: DaemonSet pods, mirror pods, pods that have finished and pods that tolerate the
// taint that keeps pods off the node. A do-not-evict pod, one that tolerates that taint
// included, holds the drain before anything is evicted, so that a node that cannot go does not
// lose its other pods for nothing. Critical pods are evicted only once every other pod is gone.
// Where the drain keeps them, pods annotated karpenter.sh/do-not-disrupt are not evicted and
// are waited for (for as long as a duration they name, or until they finish). Before the
// deadline, a pod is deleted once the deadline is within its terminationGracePeriodSeconds;
// past the deadline every remaining pod the drain waits for is deleted and the node is drained
// at once. A terminating pod is waited for until its grace period runs out, and on a Ready node
// stuckAfter longer, and no longer: the instance's termination ends whatever still runs.
func Plan(podList []corev1.Pod, drain Drain) Step {
	var step Step
	var terminating, critical, others []*corev1.Pod
	pastDeadline := !drain.Deadline.IsZero() && !drain.Now.Before(drain.Deadline)
	keepOff := drain.KeepOff
	if keepOff.Key == "" {
		keepOff = pods.CordonTaint
	}
	for i := range podList {
		pod := &podList[i]
		holds := pods.HoldsNode(pod)
		if !holds && !pods.IsEvictedByDrain(pod, keepOff) {
			continue
		}
		switch {
		case pastDeadline:
			if pod.DeletionTimestamp == nil {
				step.Delete = append(step.Delete, pod)
			}
			continue
		case pod.DeletionTimestamp == nil && !drain.Deadline.IsZero():
			// A pod is deleted early enough to get its own grace period before the deadline, as
			// upstream deletes expiring pods; it is then waited for like any terminating pod.
			expires := drain.Deadline.Add(-gracePeriod(pod))
			if !drain.Now.Before(expires) {
				step.Delete = append(step.Delete, pod)
				continue
			}
			step.recheckAt(expires)
		}
		switch {
		case holds:
			step.Blocking = append(step.Blocking, pod)
		case pod.DeletionTimestamp != nil:
			// The API server sets a pod's deletion timestamp to when its grace period ends.
			giveUp := pod.DeletionTimestamp.Time
			if drain.NodeReady {
				giveUp = giveUp.Add(stuckAfter)
			}
			if !drain.Now.Before(giveUp) {
				continue
			}
			step.recheckAt(giveUp)
			terminating = append(terminating, pod)
		case drain.KeepDoNotDisrupt && keeps(pod, drain.Now, &step):
			step.Kept = append(step.Kept, pod)
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
		step.Drained = len(critical) == 0 && len(terminating) == 0 && len(step.Kept) == 0 && len(step.Delete) == 0
	}
	return step
}

// keeps is whether the drain keeps the pod, annotated karpenter.sh/do-not-disrupt (a value it
// cannot read keeps nothing, as for voluntary disruption); the step rechecks when a duration it
// names runs out.
func keeps(pod *corev1.Pod, now time.Time, step *Step) bool {
	until, holds, err := pods.DoNotDisruptUntil(pod, now)
	if err != nil || !holds {
		return false
	}
	if !until.IsZero() {
		step.recheckAt(until)
	}
	return true
}

// recheckAt brings the step's recheck forward to t.
func (s *Step) recheckAt(t time.Time) {
	if s.Recheck.IsZero() || t.Before(s.Recheck) {
		s.Recheck = t
	}
}

// gracePeriod is the pod's terminationGracePeriodSeconds (Kubernetes' default of 30 s when unset).
func gracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return corev1.DefaultTerminationGracePeriodSeconds * time.Second
	}
	return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
}

func isCritical(pod *corev1.Pod) bool {
	return slices.Contains(criticalPriorityClasses, pod.Spec.PriorityClassName)
}
