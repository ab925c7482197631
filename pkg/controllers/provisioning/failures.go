package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// A launch that fails for a reason only the user can fix (cloudprovider.ActionRequiredError: an
// instance profile, launch template, subnet, security group or AMI the cloud refuses, the
// controller's permissions, an account quota) fails the same way at every retry until they act.
// So it is told where they look (docs/troubleshooting.md): the Provisioner is Ready=False with
// the cause as reason and the field to fix in the message (the condition's change is a Warning
// Event) until one of its launches succeeds, each pod it was for gets one Warning Event of that
// reason, and karpenter_launch_errors_total counts every failed attempt by that reason.

// launchFailures are, by Provisioner, the last of its launches that failed for a reason only its
// user can fix.
type launchFailures struct {
	mu            sync.Mutex
	byProvisioner map[string]launchFailure
}

type launchFailure struct {
	err *cloudprovider.ActionRequiredError
	// generation is the Provisioner's at the failure: a change of its spec may be the fix, which
	// its next launch tells.
	generation int64
}

func newLaunchFailures() *launchFailures {
	return &launchFailures{byProvisioner: map[string]launchFailure{}}
}

// failed records a launch of the Provisioner that failed for a reason only its user can fix.
func (f *launchFailures) failed(p *v1alpha5.Provisioner, err *cloudprovider.ActionRequiredError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byProvisioner[p.Name] = launchFailure{err: err, generation: p.Generation}
}

// succeeded forgets the Provisioner's failure: one of its launches succeeded. It reports
// whether there was one, whose condition a pass must now clear.
func (f *launchFailures) succeeded(provisioner string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, failed := f.byProvisioner[provisioner]
	delete(f.byProvisioner, provisioner)
	return failed
}

// current are the failures recorded, by Provisioner.
func (f *launchFailures) current() map[string]*cloudprovider.ActionRequiredError {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*cloudprovider.ActionRequiredError, len(f.byProvisioner))
	for name, failure := range f.byProvisioner {
		out[name] = failure.err
	}
	return out
}

// mark makes each Provisioner of the pass whose last launch failed so Ready=False with the
// cause, and forgets the failures of Provisioners gone or changed since.
func (f *launchFailures) mark(plans map[string]*provisionerPlan) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, failure := range f.byProvisioner {
		p, ok := plans[name]
		if !ok || p.updated.Generation != failure.generation {
			delete(f.byProvisioner, name)
			continue
		}
		p.updated.StatusConditions().MarkFalse(apis.ConditionReady, failure.err.Reason, "Launching nodes fails: %v", failure.err)
	}
}

// reportLaunchFailure records a failed launch of the Provisioner that only its user can fix, for
// the Provisioner's condition, and tells each pod it was for, once; it leaves other failures
// alone.
func (c *Controller) reportLaunchFailure(p *v1alpha5.Provisioner, err error, pods []*corev1.Pod) {
	required := cloudprovider.ActionRequired(err)
	if required == nil {
		return
	}
	c.launchFailures.failed(p, required)
	message := fmt.Sprintf("Launching a node for this pod by provisioner %s fails: %v", p.Name, required)
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
func (c *Controller) cannotLaunch(plans map[string]*provisionerPlan) map[string]*cloudprovider.ActionRequiredError {
	out := map[string]*cloudprovider.ActionRequiredError{}
	for name, p := range plans {
		if p.unresolved != nil {
			out[name] = p.unresolved
		}
	}
	for name, err := range c.launchFailures.current() {
		if _, ok := plans[name]; ok {
			out[name] = err
		}
	}
	return out
}

// whyCannotLaunch says, for a pod no Provisioner can take, which of those that might have taken
// it cannot launch (failing): the pod would not learn why otherwise. It returns the text to add to
// what the pod is told, and those Provisioners' names.
func whyCannotLaunch(pod *corev1.Pod, failing map[string]*cloudprovider.ActionRequiredError) (string, []string) {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(failing)) {
		// A pod selecting another Provisioner by name is not one this one would take.
		if selected, ok := pod.Spec.NodeSelector[v1alpha5.ProvisionerNameLabelKey]; ok && selected != name {
			continue
		}
		names = append(names, name)
	}
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "; provisioner %s cannot launch: %s: %v", name, failing[name].Reason, failing[name])
	}
	return b.String(), names
}
