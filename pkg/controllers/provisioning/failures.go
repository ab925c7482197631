package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pools"
)

// A launch that fails for a reason only the user can fix (cloudprovider.ActionRequiredError: an
// instance profile, launch template, subnet, security group or AMI the cloud refuses, the
// controller's permissions, an account quota) fails the same way at every retry until they act.
// So it is told where they look (docs/troubleshooting.md): the Provisioner is Ready=False with
// the cause as reason and the field to fix in the message (the condition's change is a Warning
// Event) until one of its launches succeeds, each pod it was for gets one Warning Event of that
// reason, and karpenter_launch_errors_total counts every failed attempt by that reason.

// launchFailures are, by pool, the last of its launches that failed for a reason only its user
// can fix.
type launchFailures struct {
	mu     sync.Mutex
	byPool map[pools.Key]launchFailure
}

type launchFailure struct {
	err *cloudprovider.ActionRequiredError
	// generation is the Provisioner's at the failure: a change of its spec may be the fix, which
	// its next launch tells.
	generation int64
}

func newLaunchFailures() *launchFailures {
	return &launchFailures{byPool: map[pools.Key]launchFailure{}}
}

// failed records a launch of the pool that failed for a reason only its user can fix.
func (f *launchFailures) failed(p launcher.Pool, err *cloudprovider.ActionRequiredError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byPool[p.Key()] = launchFailure{err: err, generation: p.Object().GetGeneration()}
}

// succeeded forgets the pool's failure: one of its launches succeeded. It reports whether there
// was one, whose condition a pass must now clear.
func (f *launchFailures) succeeded(pool pools.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, failed := f.byPool[pool]
	delete(f.byPool, pool)
	return failed
}

// current are the failures recorded, by pool.
func (f *launchFailures) current() map[pools.Key]*cloudprovider.ActionRequiredError {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[pools.Key]*cloudprovider.ActionRequiredError, len(f.byPool))
	for key, failure := range f.byPool {
		out[key] = failure.err
	}
	return out
}

// mark makes each Provisioner of the pass whose last launch failed so Ready=False with the
// cause, and forgets the failures of pools gone or changed since. (A NodePool's failed launch
// is told on its NodeClaim and to its pods.)
func (f *launchFailures) mark(plans map[pools.Key]*poolPlan) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, failure := range f.byPool {
		p, ok := plans[key]
		if !ok || p.object().GetGeneration() != failure.generation {
			delete(f.byPool, key)
			continue
		}
		if p.updated == nil {
			continue
		}
		p.updated.StatusConditions().MarkFalse(apis.ConditionReady, failure.err.Reason, "Launching nodes fails: %v", failure.err)
	}
}

// reportLaunchFailure records a failed launch of the Provisioner that only its user can fix, for
// the Provisioner's condition, and tells each pod it was for, once; it leaves other failures
// alone.
func (c *Controller) reportLaunchFailure(p launcher.Pool, err error, pods []*corev1.Pod) {
	required := cloudprovider.ActionRequired(err)
	if required == nil {
		return
	}
	c.launchFailures.failed(p, required)
	message := fmt.Sprintf("Launching a node for this pod by %s fails: %v", p.Key(), required)
	c.toldMu.Lock()
	defer c.toldMu.Unlock()
	for _, pod := range pods {
		if c.told[pod.UID] == required.Reason {
			continue
		}
		c.told[pod.UID] = required.Reason
		c.recorder.Event(pod, corev1.EventTypeWarning, required.Reason, message)
	}
}

// launchErrorReason is the reason label of karpenter_launch_errors_total for a failed launch
// that is not for want of capacity.
func launchErrorReason(err error) string {
	if required := cloudprovider.ActionRequired(err); required != nil {
		return required.Reason
	}
	return ReasonCloudError
}

// cannotLaunch are the Provisioners of the pass that cannot launch for a reason only their user
// can fix, by name: those whose instance types could not be resolved so (a Provisioner whose
// subnets none are selected plans for no pod), and those whose last launch failed so (once its
// offerings failed for want of quota, they are not planned for a while).
func (c *Controller) cannotLaunch(plans map[pools.Key]*poolPlan) map[pools.Key]*cloudprovider.ActionRequiredError {
	out := map[pools.Key]*cloudprovider.ActionRequiredError{}
	for key, p := range plans {
		if p.unresolved != nil {
			out[key] = p.unresolved
		}
	}
	for key, err := range c.launchFailures.current() {
		if _, ok := plans[key]; ok {
			out[key] = err
		}
	}
	return out
}

// whyCannotLaunch says, for a pod no Provisioner can take, which of those that might have taken
// it cannot launch (failing): the pod would not learn why otherwise. It returns the text to add to
// what the pod is told, and those Provisioners' names.
func whyCannotLaunch(pod *corev1.Pod, failing map[pools.Key]*cloudprovider.ActionRequiredError) (string, []pools.Key) {
	keys := slices.SortedFunc(maps.Keys(failing), pools.Compare)
	var affected []pools.Key
	var b strings.Builder
	for _, key := range keys {
		// A pod selecting another pool by name is not one this one would take.
		if selected, ok := pod.Spec.NodeSelector[key.LabelKey]; ok && selected != key.Name {
			continue
		}
		affected = append(affected, key)
		fmt.Fprintf(&b, "; %s cannot launch: %s: %v", key, failing[key].Reason, failing[key])
	}
	return b.String(), affected
}
