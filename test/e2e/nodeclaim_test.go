package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
)

// TestEveryLaunchIsANodeClaim: the node a Provisioner launches is a NodeClaim first. It
// records its instance and its node, and is Ready once the node is; `kubectl get nodeclaims`
// shows it as upstream's columns do. Deleting the NodeClaim drains the node and terminates its
// instance; an instance terminated out of band takes its NodeClaim with it; either way the pods
// get a new node.
func TestEveryLaunchIsANodeClaim(t *testing.T) {
	t.Parallel()
	const name = "nodeclaims"
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Labels: map[string]string{"e2e.karpenter.sh/team": name}})
	createObject(t, builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: 1, Pod: builders.PodOptions{
		Labels: map[string]string{"app": name}, NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name},
		Requests: builders.Resources("cpu", "1", "memory", "1Gi"),
	}}))

	first := readyNodeClaim(t, name, "")
	node := &corev1.Node{}
	if err := stack.Env.Client.Get(context.Background(), client.ObjectKey{Name: first.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1.CapacityTypeLabelKey, "e2e.karpenter.sh/team"} {
		if first.Labels[key] == "" || first.Labels[key] != node.Labels[key] {
			t.Errorf("label %s: nodeclaim %q, node %q; want the node's, set", key, first.Labels[key], node.Labels[key])
		}
	}
	if node.Spec.ProviderID != first.Status.ProviderID || len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != first.UID ||
		node.Labels[v1.NodeRegisteredLabelKey] != "true" || node.Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Errorf("node %s: provider id %s, owners %v, labels %v; want the nodeclaim's instance, owned by it, registered and initialized",
			node.Name, node.Spec.ProviderID, node.OwnerReferences, node.Labels)
	}
	if first.Status.ImageID == "" || first.Status.Capacity.Cpu().IsZero() || first.Status.Allocatable.Memory().IsZero() {
		t.Errorf("nodeclaim status %+v, want the image, capacity and allocatable", first.Status)
	}
	columns := kubectl(t, "get", "nodeclaims", first.Name, "--no-headers", "-o", "custom-columns=NODE:.status.nodeName")
	printed := kubectl(t, "get", "nodeclaims", first.Name, "--no-headers")
	for _, want := range []string{first.Labels[corev1.LabelInstanceTypeStable], first.Labels[v1.CapacityTypeLabelKey], first.Labels[corev1.LabelTopologyZone], strings.TrimSpace(columns), "True"} {
		if !strings.Contains(printed, want) {
			t.Errorf("kubectl get nodeclaims printed %q, want %q in it", printed, want)
		}
	}

	// kubectl delete nodeclaim: the node is drained and goes, the instance is terminated, the
	// pod gets a new node.
	kubectl(t, "delete", "nodeclaim", first.Name, "--wait=false")
	waitGone(t, node)
	eventually.Holds(t, "nodeclaim "+first.Name+" gone, its instance terminated", func() (bool, string, error) {
		err := stack.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(first), &v1.NodeClaim{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		return apierrors.IsNotFound(err) && terminations(instanceIDOf(node)) > 0, fmt.Sprintf("terminations %d", terminations(instanceIDOf(node))), nil
	}, eventually.Timeout(waitTimeout))
	second := readyNodeClaim(t, name, first.Name)
	waitApp(t, name, 1)

	// Terminated out of band: garbage collection deletes the NodeClaim, and the pod gets a new
	// node again.
	if err := stack.Emulator.TerminateEC2Instances([]string{second.Status.ProviderID[strings.LastIndex(second.Status.ProviderID, "/")+1:]}); err != nil {
		t.Fatal(err)
	}
	third := readyNodeClaim(t, name, second.Name)
	if third.Name == first.Name {
		t.Errorf("the first nodeclaim's name came back")
	}
	waitApp(t, name, 1)
}

// readyNodeClaim waits until the Provisioner has exactly one NodeClaim, not named other, whose
// Launched, Registered, Initialized and Ready conditions are True, and returns it.
func readyNodeClaim(t *testing.T, provisionerName, other string) *v1.NodeClaim {
	t.Helper()
	var found *v1.NodeClaim
	eventually.Holds(t, "one Ready nodeclaim of provisioner "+provisionerName, func() (bool, string, error) {
		list := &v1.NodeClaimList{}
		if err := stack.Env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisionerName}); err != nil {
			return false, "", err
		}
		var seen []string
		found = nil
		for i := range list.Items {
			nc := &list.Items[i]
			var conditions []string
			for _, c := range nc.Status.Conditions {
				conditions = append(conditions, c.Type+"="+string(c.Status))
			}
			seen = append(seen, fmt.Sprintf("%s deleting=%t %v", nc.Name, nc.DeletionTimestamp != nil, conditions))
			if nc.Name != other && nc.DeletionTimestamp == nil {
				found = nc
			}
		}
		ready := len(list.Items) == 1 && found != nil
		for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeReady} {
			ready = ready && found.IsTrue(c)
		}
		return ready, strings.Join(seen, "; "), nil
	}, eventually.Timeout(waitTimeout))
	return found
}

// kubectl runs kubectl against the stack and returns what it printed.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlOn(t, stack, args...)
}

// kubectlOn is kubectl against a stack of the test's own.
func kubectlOn(t *testing.T, stack *sandbox.Stack, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", stack.Env.KubeconfigPath}, args...)...) //nolint:gosec // G204: kubectl with the test's own arguments.
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
