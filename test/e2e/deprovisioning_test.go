package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/watchcount"
	"karpenter.sh/karpenter/test/sandbox"
)

// The deprovisioning crash tests kill the controller, so they run before the parallel tests,
// one at a time. Each holds the cluster at its kill point by something a user could do, never
// by timing: the kill lands there however slow the machine is.

// TestControllerKilledMidDrainFinishesTheDrainAndTerminatesOnce kills the controller while a
// deleted node's drain waits on a PodDisruptionBudget: one pod evicted, the other held until the
// first one's replacement runs, which the Provisioner's limits keep from getting a node.
func TestControllerKilledMidDrainFinishesTheDrainAndTerminatesOnce(t *testing.T) {
	const name = "drain"
	ctx := context.Background()
	// Exactly one m5.large (2 vCPUs) fits under the limit: an evicted pod's replacement has
	// nowhere to run, so the budget holds the second eviction for as long as the test wants.
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Limits: builders.Resources("cpu", "2"), Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
	}})
	labels := map[string]string{"app": name}
	createObject(t, builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: 2, Pod: builders.PodOptions{
		Labels: labels, NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", "500m"),
	}}))
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sandbox.Namespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	createObject(t, budget)
	placed := waitApp(t, name, 2)
	node := onlyNode(t, placed)
	eventually.Holds(t, "the budget allowing one disruption", func() (bool, string, error) {
		err := stack.Env.Client.Get(ctx, client.ObjectKeyFromObject(budget), budget)
		return err == nil && budget.Status.DisruptionsAllowed == 1, fmt.Sprintf("%d allowed", budget.Status.DisruptionsAllowed), err
	}, eventually.Timeout(waitTimeout))
	fewest := watchcount.Available(t, stack.Env.Config, sandbox.Namespace, "app="+name, 2)
	original := slices.Sorted(maps.Keys(placed))

	if err := stack.Env.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "one pod evicted, the other held by its budget", func() (bool, string, error) {
		var evicted, held []string
		for _, podName := range original {
			pod := &corev1.Pod{}
			err := stack.Env.Client.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: podName}, pod)
			switch {
			case apierrors.IsNotFound(err) || err == nil && pod.DeletionTimestamp != nil:
				evicted = append(evicted, podName)
			case err != nil:
				return false, "", err
			case pod.Spec.NodeName == node.Name && pod.Status.Phase == corev1.PodRunning:
				held = append(held, podName)
			}
		}
		blocked, err := hasEvent(node.Name, termination.ReasonEvictionBlocked)
		if err != nil {
			return false, "", err
		}
		return len(evicted) == 1 && len(held) == 1 && blocked, fmt.Sprintf("evicted %v, held %v, EvictionBlocked %t", evicted, held, blocked), nil
	}, eventually.Timeout(waitTimeout))
	instanceID := instanceIDOf(node)
	if n := terminations(instanceID); n != 0 {
		t.Fatalf("instance %s terminated %d times while its node still drains", instanceID, n)
	}
	stack.KillController()
	t.Logf("controller killed mid-drain of node %s (instance %s)", node.Name, instanceID)

	// Room for the evicted pod's replacement: a second node fits under the limit now. The
	// controller that starts knows only what the cluster holds.
	raised := &v1alpha5.Provisioner{}
	if err := stack.Env.Client.Get(ctx, client.ObjectKey{Name: name}, raised); err != nil {
		t.Fatal(err)
	}
	stored := raised.DeepCopy()
	raised.Spec.Limits.Resources = builders.Resources("cpu", "4")
	if err := stack.Env.Client.Patch(ctx, raised, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	if err := stack.StartController(ctx); err != nil {
		t.Fatal(err)
	}

	waitGone(t, node)
	replacement := onlyNode(t, waitApp(t, name, 2))
	eventually.Holds(t, "every live instance with its Node and every Node with its instance", func() (bool, string, error) {
		return instancesMatchNodes(name, 1)
	}, eventually.Timeout(waitTimeout))
	if n := terminations(instanceID); n != 1 {
		t.Errorf("instance %s of the drained node terminated %d times, want once", instanceID, n)
	}
	if replacement.Name == node.Name {
		t.Errorf("the pods run on the deleted node %s", node.Name)
	}
	if n := fewest(); n < 1 {
		t.Errorf("%d pods of the budget's minAvailable 1 ran at one point of the drain", n)
	}
}

// TestControllerKilledMidReplaceDeletesTheReplacedNodesAndLaunchesOnce kills the controller
// after consolidation launched the cheaper node that replaces two under-used ones and before it
// deleted them. An admission policy refuses the old nodes' deletion until the controller is
// dead, so the kill lands in that window whatever the timing.
func TestControllerKilledMidReplaceDeletesTheReplacedNodesAndLaunchesOnce(t *testing.T) {
	const name = "reallocate"
	ctx := context.Background()
	launchesBefore := len(stack.Emulator.FleetRequests())
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large", "m5.xlarge"}},
	}})
	selector := map[string]string{v1alpha5.ProvisionerNameLabelKey: name}
	// Two m5.xlarge (4 vCPUs): a 3-CPU pod each. Then one 700m pod on each (the room left takes
	// one), and the big pods go: 1.4 CPU on two m5.xlarge, which one m5.large holds.
	big := builders.Deployment(builders.DeploymentOptions{Name: name + "-big", Namespace: sandbox.Namespace, Replicas: 2, Pod: builders.PodOptions{
		NodeSelector: selector, Requests: builders.Resources("cpu", "3"),
	}})
	createObject(t, big)
	oldNodes := distinctNodes(t, waitApp(t, big.Name, 2), 2)
	createObject(t, builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: 2, Pod: builders.PodOptions{
		NodeSelector: selector, Requests: builders.Resources("cpu", "700m"),
	}}))
	if placed := distinctNodes(t, waitApp(t, name, 2), 2); !slices.Equal(nodeNames(placed), nodeNames(oldNodes)) {
		t.Fatalf("the small pods run on %v, not one on each of %v", nodeNames(placed), nodeNames(oldNodes))
	}
	if err := stack.Env.Client.Delete(ctx, big); err != nil {
		t.Fatal(err)
	}
	waitApp(t, big.Name, 0)
	release := holdNodeDeletion(t, oldNodes)

	enable := []byte(`{"spec":{"consolidation":{"enabled":true,"budget":"100%"}}}`)
	if err := stack.Env.Client.Patch(ctx, &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, enable)); err != nil {
		t.Fatal(err)
	}
	var replacement *corev1.Node
	eventually.Holds(t, "a replacement launched for both nodes", func() (bool, string, error) {
		nodeList := &corev1.NodeList{}
		if err := stack.Env.Client.List(ctx, nodeList, client.MatchingLabels(selector)); err != nil {
			return false, "", err
		}
		for i := range nodeList.Items {
			if _, ok := nodeList.Items[i].Annotations[v1alpha5.ReplacesAnnotationKey]; ok {
				replacement = &nodeList.Items[i]
			}
		}
		return replacement != nil, fmt.Sprintf("%d nodes", len(nodeList.Items)), nil
	}, eventually.Interval(50*time.Millisecond), eventually.Timeout(waitTimeout))
	stack.KillController()
	t.Logf("controller killed with replacement %s (%s) launched for %v", replacement.Name,
		replacement.Labels[corev1.LabelInstanceTypeStable], replacement.Annotations[v1alpha5.ReplacesAnnotationKey])
	if replaces := strings.Split(replacement.Annotations[v1alpha5.ReplacesAnnotationKey], ","); !slices.Equal(slices.Sorted(slices.Values(replaces)), nodeNames(oldNodes)) {
		t.Fatalf("the replacement replaces %v, want %v", replaces, nodeNames(oldNodes))
	}
	for _, old := range oldNodes {
		current := &corev1.Node{}
		if err := stack.Env.Client.Get(ctx, client.ObjectKeyFromObject(old), current); err != nil || current.DeletionTimestamp != nil {
			t.Fatalf("node %s went before the kill (%v): the kill point was missed", old.Name, err)
		}
	}
	release()
	if err := stack.StartController(ctx); err != nil {
		t.Fatal(err)
	}

	for _, old := range oldNodes {
		waitGone(t, old)
	}
	placed := waitApp(t, name, 2)
	eventually.Holds(t, "every live instance with its Node and every Node with its instance", func() (bool, string, error) {
		return instancesMatchNodes(name, 1)
	}, eventually.Timeout(waitTimeout))
	if node := onlyNode(t, placed); node.Name != replacement.Name {
		t.Errorf("the pods run on %s, not on the replacement %s", node.Name, replacement.Name)
	}
	if it := replacement.Labels[corev1.LabelInstanceTypeStable]; it != "m5.large" {
		t.Errorf("two m5.xlarge replaced by %s, want the cheaper m5.large", it)
	}
	// Two instances for the big pods, one for the replacement; a launch retried with its
	// idempotency key would be answered again, not launched.
	if n := launchedInstances(name, launchesBefore); n != 3 {
		t.Errorf("%d instances launched for provisioner %s, want 3 (two nodes and one replacement)", n, name)
	}
	for _, old := range oldNodes {
		if n := terminations(instanceIDOf(old)); n != 1 {
			t.Errorf("instance of replaced node %s terminated %d times, want once", old.Name, n)
		}
	}
}

// holdNodeDeletion makes the API server refuse to delete the nodes, by a ValidatingAdmissionPolicy
// on a label the nodes are given, until release; release waits until deletions pass again.
func holdNodeDeletion(t *testing.T, held []*corev1.Node) (release func()) {
	t.Helper()
	objects := make([]client.Object, len(held))
	for i, node := range held {
		objects[i] = node
	}
	return holdDeletion(t, stack, "", "nodes", objects)
}

// holdDeletion makes the stack's API server refuse to delete the objects, of the group and
// resource, by a ValidatingAdmissionPolicy on a label they are given, until release; release
// waits until deletions pass again.
func holdDeletion(t *testing.T, stack *sandbox.Stack, group, resource string, held []client.Object) (release func()) {
	t.Helper()
	ctx := context.Background()
	const label = "e2e.karpenter.sh/hold-deletion"
	for _, object := range held {
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, label))
		if err := stack.Env.Client.Patch(ctx, object.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-hold-" + resource + "-deletion"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "held by the e2e test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}},
		},
	}
	for _, object := range []client.Object{policy, binding} {
		if err := stack.Env.Client.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	// The API server loads policies asynchronously: a dry run tells when it refuses.
	refuses := func() (bool, error) {
		err := stack.Env.Client.Delete(ctx, held[0].DeepCopyObject().(client.Object), client.DryRunAll)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil && !strings.Contains(err.Error(), "held by the e2e test") {
			return false, err
		}
		return err != nil, nil
	}
	eventually.Holds(t, "the API server refusing to delete the held "+resource, func() (bool, string, error) {
		refused, err := refuses()
		return refused, "", err
	}, eventually.Timeout(waitTimeout))
	unhold := func() error {
		for _, object := range []client.Object{binding, policy} {
			if err := stack.Env.Client.Delete(ctx, object); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		return nil
	}
	// A test that fails before it releases the objects still lets its cleanup delete them.
	t.Cleanup(func() {
		if err := unhold(); err != nil {
			t.Error(err)
		}
	})
	return func() {
		t.Helper()
		if err := unhold(); err != nil {
			t.Fatal(err)
		}
		eventually.Holds(t, "the API server deleting the held "+resource+" again", func() (bool, string, error) {
			refused, err := refuses()
			return !refused, "", err
		}, eventually.Timeout(waitTimeout))
	}
}

// createObject creates the object and deletes it when the test ends.
func createObject(t *testing.T, object client.Object) {
	t.Helper()
	if err := stack.Env.Client.Create(context.Background(), object); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stack.Env.Client.Delete(context.Background(), object); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
}

// waitApp waits until replicas pods labelled app=name run on Ready nodes, none other left, and
// returns the nodes by pod name.
func waitApp(t *testing.T, app string, replicas int) map[string]*corev1.Node {
	t.Helper()
	return waitAppOn(t, stack, app, replicas)
}

// waitAppOn is waitApp on a stack of the test's own.
func waitAppOn(t *testing.T, stack *sandbox.Stack, app string, replicas int) map[string]*corev1.Node {
	t.Helper()
	var placed map[string]*corev1.Node
	eventually.Holds(t, fmt.Sprintf("%d pods of %s Running", replicas, app), func() (bool, string, error) {
		podList := &corev1.PodList{}
		if err := stack.Env.Client.List(context.Background(), podList, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": app}); err != nil {
			return false, "", err
		}
		placed = map[string]*corev1.Node{}
		var seen []string
		for _, pod := range podList.Items {
			seen = append(seen, fmt.Sprintf("%s %s on %q", pod.Name, pod.Status.Phase, pod.Spec.NodeName))
			node := &corev1.Node{}
			if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning ||
				stack.Env.Client.Get(context.Background(), client.ObjectKey{Name: pod.Spec.NodeName}, node) != nil || !nodes.IsReady(node) {
				continue
			}
			placed[pod.Name] = node
		}
		return len(placed) == replicas && len(podList.Items) == replicas, strings.Join(seen, ", "), nil
	}, eventually.Timeout(waitTimeout))
	return placed
}

// onlyNode is the one node all the pods run on.
func onlyNode(t *testing.T, placed map[string]*corev1.Node) *corev1.Node {
	t.Helper()
	return distinctNodes(t, placed, 1)[0]
}

// distinctNodes are the nodes the pods run on, by name, which must be want of them.
func distinctNodes(t *testing.T, placed map[string]*corev1.Node, want int) []*corev1.Node {
	t.Helper()
	byName := map[string]*corev1.Node{}
	for _, node := range placed {
		byName[node.Name] = node
	}
	var out []*corev1.Node
	for _, nodeName := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[nodeName])
	}
	if len(out) != want {
		t.Fatalf("pods run on nodes %v, want %d nodes", nodeNames(out), want)
	}
	return out
}

func nodeNames(nodeList []*corev1.Node) []string {
	names := make([]string, 0, len(nodeList))
	for _, node := range nodeList {
		names = append(names, node.Name)
	}
	slices.Sort(names)
	return names
}

// waitGone waits until the node is gone: drained, its instance terminated, the finalizer removed.
func waitGone(t *testing.T, node *corev1.Node) {
	t.Helper()
	eventually.Holds(t, "node "+node.Name+" gone", func() (bool, string, error) {
		current := &corev1.Node{}
		err := stack.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(node), current)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("finalizers %v, deleting since %v", current.Finalizers, current.DeletionTimestamp), err
	}, eventually.Timeout(waitTimeout))
}

// instanceIDOf is the EC2 instance id of a node, the end of its providerID aws:///<zone>/<id>.
func instanceIDOf(node *corev1.Node) string {
	return node.Spec.ProviderID[strings.LastIndex(node.Spec.ProviderID, "/")+1:]
}

// terminations counts the TerminateInstances calls the emulator answered for the instance.
func terminations(instanceID string) int {
	return terminationsOn(stack, instanceID)
}

// terminationsOn is terminations on a stack of the test's own.
func terminationsOn(stack *sandbox.Stack, instanceID string) int {
	n := 0
	for _, call := range stack.Emulator.TerminationRequests() {
		if slices.Contains(call.InstanceIDs, instanceID) {
			n++
		}
	}
	return n
}

// launchedInstances counts the instances the CreateFleet calls since the first skipped launched
// for the Provisioner (one call may launch several); a call replayed by its client token
// launches nothing.
func launchedInstances(provisionerName string, skip int) int {
	return launchedInstancesOn(stack, provisionerName, skip)
}

// launchedInstancesOn is launchedInstances on a stack of the test's own.
func launchedInstancesOn(stack *sandbox.Stack, provisionerName string, skip int) int {
	n := 0
	for _, request := range stack.Emulator.FleetRequests()[skip:] {
		if !request.Replayed && request.TagSpecifications["instance"][v1alpha5.ProvisionerNameLabelKey] == provisionerName {
			n += len(request.InstanceIDs)
		}
	}
	return n
}
