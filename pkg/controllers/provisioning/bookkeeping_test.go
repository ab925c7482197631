package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpenterapis "karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	nodeclaimtermination "karpenter.sh/karpenter/pkg/controllers/nodeclaim/termination"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestANewInstanceGetsItsOwnNodeOverAStaleNodeOfItsName (issue 34, finding 13): EC2 gives a
// terminated instance's private address, so its node name, to a later instance, and the Node of
// the first may still be there (its instance terminated while the controller was down, its
// removal not done yet). Creating the new instance's Node then meets that Node: it is not the
// new instance's (another providerID), so the new instance must still get a Node of its own,
// rather than run without one until garbage collection terminates it, its pods pending.
func TestANewInstanceGetsItsOwnNodeOverAStaleNodeOfItsName(t *testing.T) {
	env, cloud := startLauncher(t, false)
	const name = "stale"
	if err := env.Client.Create(t.Context(), builders.Provisioner(builders.ProvisionerOptions{Name: name})); err != nil {
		t.Fatal(err)
	}
	// The fake cloud names its first instance's node so. The stale Node is another
	// Provisioner's, so the plan has no room for the pod there.
	stale := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:       "ip-10-0-0-1.us-west-2.compute.internal",
			Labels:     map[string]string{v1alpha5.ProvisionerNameLabelKey: "deleted-since", corev1.LabelInstanceTypeStable: "r5.large"},
			Finalizers: []string{v1alpha5.TerminationFinalizer},
		},
		Spec: corev1.NodeSpec{ProviderID: "fake:///us-west-2a/i-00000000000000dead"},
	}
	if err := env.Client.Create(t.Context(), stale); err != nil {
		t.Fatal(err)
	}
	pod := builders.Pod(builders.PodOptions{Name: name, Namespace: "default", Requests: builders.Resources("cpu", "1"),
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}})
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}

	eventually.Holds(t, "the pod running on the Node of the instance launched for it", func() (bool, string, error) {
		instances, err := cloud.List(t.Context())
		if err != nil {
			return false, "", err
		}
		current := &corev1.Pod{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
			return false, "", err
		}
		node := &corev1.Node{}
		if current.Spec.NodeName != "" {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: current.Spec.NodeName}, node); err != nil {
				return false, "", err
			}
		}
		var launched []string
		for _, instance := range instances {
			launched = append(launched, instance.ProviderID+" as "+instance.NodeName)
		}
		return len(instances) == 1 && current.Status.Phase == corev1.PodRunning && node.Spec.ProviderID == instances[0].ProviderID,
			fmt.Sprintf("instances %v; pod %s on %q (%s), nominated to %q", launched, current.Status.Phase, current.Spec.NodeName, node.Spec.ProviderID, current.Status.NominatedNodeName), nil
	}, eventually.Timeout(pollTimeout))
}

// TestLimitsFreeTheRoomOfANodeDeletedBeforeAnyPassCountedIt (issue 34, finding 12): a launch's
// room stays reserved under the limits until a pass counts its Node. A Node deleted before any
// pass did (a pod bound at once and nothing else pending, then the node deleted) must not leave
// its room reserved for good: the Provisioner, at its limit with that node, launches again once
// it is gone.
func TestLimitsFreeTheRoomOfANodeDeletedBeforeAnyPassCountedIt(t *testing.T) {
	env, cloud := startLauncher(t, true)
	const name = "limited"
	// One m5.large (2 vCPUs) fills the limit.
	if err := env.Client.Create(t.Context(), builders.Provisioner(builders.ProvisionerOptions{Name: name, Limits: builders.Resources("cpu", "2"),
		Requirements: []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}}}})); err != nil {
		t.Fatal(err)
	}
	pod := func(podName string) *corev1.Pod {
		return builders.Pod(builders.PodOptions{Name: podName, Namespace: "default", Requests: builders.Resources("cpu", "1"),
			NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}})
	}
	running := func(pod *corev1.Pod) *corev1.Node {
		t.Helper()
		node := &corev1.Node{}
		eventually.Holds(t, "pod "+pod.Name+" running", func() (bool, string, error) {
			current := &corev1.Pod{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
				return false, "", err
			}
			if current.Status.Phase != corev1.PodRunning {
				p := &v1alpha5.Provisioner{}
				if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, p); err != nil {
					return false, "", err
				}
				return false, fmt.Sprintf("pod %s on %q; provisioner %+v", current.Status.Phase, current.Spec.NodeName, p.Status.Conditions), nil
			}
			return true, "", env.Client.Get(t.Context(), client.ObjectKey{Name: current.Spec.NodeName}, node)
		}, eventually.Timeout(pollTimeout))
		return node
	}
	first := pod("first")
	if err := env.Client.Create(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	node := running(first)
	if err := env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the node and its instance gone", func() (bool, string, error) {
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), &corev1.Node{})
		instances, listErr := cloud.List(t.Context())
		if listErr != nil {
			return false, "", listErr
		}
		return apierrors.IsNotFound(err) && len(instances) == 0, fmt.Sprintf("%d instances, node: %v", len(instances), err), client.IgnoreNotFound(err)
	}, eventually.Timeout(pollTimeout))

	second := pod("second")
	if err := env.Client.Create(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	if again := running(second); again.Name == node.Name {
		t.Errorf("the second pod runs on the deleted node %s", node.Name)
	}
}

// startLauncher starts a control plane and the operator's provisioning and termination
// controllers (termination releases the Nodes deleted, as it does in a cluster) and the
// NodeClaims' lifecycle and termination (a NodeClaim whose instance is gone is deleted) on a fake cloud
// of its own, whose first instance is ip-10-0-0-1; with bindPods the allocator binds the pods it
// launches for, as --bind-pods does. What the test left is logged when it failed.
func startLauncher(t *testing.T, bindPods bool) (*environment.Environment, *fake.InstanceProvider) {
	t.Helper()
	env := environment.New(t, environment.Options{
		AddToScheme:       []func(*runtime.Scheme) error{karpenterapis.AddToScheme},
		Scheduler:         true,
		ControllerManager: true,
		Kwok:              true,
	})
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	j := startJoiner(t, env)
	operatortest.Start(t, env, operatortest.Options{CompleteNode: j.complete, Controllers: controllers.Options{
		Enabled:           []string{provisioning.Name, termination.Name, nodeclaimlifecycle.Name, nodeclaimtermination.Name},
		CloudProvider:     cloudprovider.NewRegistry(),
		InstanceProvider:  cloud,
		BatchIdleDuration: 200 * time.Millisecond,
		BatchMaxDuration:  2 * time.Second,
		BindPods:          bindPods,
	}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpNodesAndEvents(t, env)
		}
	})
	return env, cloud
}

// dumpNodesAndEvents logs what a failed test left: every Node and Event.
func dumpNodesAndEvents(t *testing.T, env *environment.Environment) {
	var nodeList corev1.NodeList
	if err := env.Client.List(context.Background(), &nodeList); err == nil {
		for _, n := range nodeList.Items {
			t.Logf("node %s %s deleting since %v finalizers %v", n.Name, n.Spec.ProviderID, n.DeletionTimestamp, n.Finalizers)
		}
	}
	var events corev1.EventList
	if err := env.Client.List(context.Background(), &events); err == nil {
		for _, e := range events.Items {
			t.Logf("event on %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}
