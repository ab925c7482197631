package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
	"karpenter.sh/karpenter/test/sandbox"
)

// TestControllerKilledAtEachStepOfANodeClaimsLife kills the controller (SIGKILL) at a fixed point
// of each step of a NodeClaim's life, not at a time, and restarts it: after the NodeClaims are
// created and before the cloud is asked; after the cloud launched and before any NodeClaim
// recorded its instance; after the NodeClaim lifecycle matched and synced the Node its kubelet
// registered and before it lifted the unregistered taint (every node ends registered); mid-drain,
// after a draining node's first pod is evicted; after a drained node's instance is terminated and
// before its finalizer goes. Each time: exactly one
// instance per NodeClaim, launched once, none orphaned past the garbage collection grace, no
// NodeClaim without its instance, every pod running. It kills the controller, so it runs before
// the parallel tests.
func TestControllerKilledAtEachStepOfANodeClaimsLife(t *testing.T) {
	t.Cleanup(func() { restartController(t, "") })
	for i, point := range []string{killpoint.NodeClaimsCreated, killpoint.InstancesLaunched, killpoint.NodeRegistered} {
		t.Run("killed at "+point, func(t *testing.T) {
			name := fmt.Sprintf("killpoint-%d", i)
			createKillpointProvisioner(t, name)
			skip := len(stack.Emulator.FleetRequests())
			restartController(t, point)
			// Two pods of 3 CPUs: two identical m5.xlarge NodeClaims, one launch group.
			createKillpointApp(t, name, 2)
			waitKilled(t, point)
			restartController(t, "")
			waitApp(t, name, 2)
			eventually.Holds(t, "one instance per NodeClaim, each with its Node registered, launched once", func() (bool, string, error) {
				ok, why, err := nodeClaimsMatchInstances(name)
				launched := launchedInstances(name, skip)
				unregistered, listErr := unregisteredNodes(name)
				return ok && launched == 2 && len(unregistered) == 0, fmt.Sprintf("%s; %d instances launched since the subtest began; unregistered nodes %v", why, launched, unregistered), errors.Join(err, listErr)
			}, eventually.Timeout(waitTimeout))
		})
	}
	for _, point := range []string{killpoint.PodEvicted, killpoint.InstanceTerminated} {
		t.Run("killed at "+point, func(t *testing.T) { killedWhileDeleting(t, point) })
	}
}

// killedWhileDeleting deletes a running pod's NodeClaim with the controller set to die at point,
// restarts it, and waits for the NodeClaim and its node to be gone, its instance terminated
// exactly once and the pod running on a new node.
func killedWhileDeleting(t *testing.T, point string) {
	name := "killpoint-" + point
	createKillpointProvisioner(t, name)
	createKillpointApp(t, name, 1)
	waitApp(t, name, 1)
	list := &v1.NodeClaimList{}
	if err := stack.Env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: name}); err != nil || len(list.Items) != 1 {
		t.Fatalf("%d nodeclaims (%v), want the pod's", len(list.Items), err)
	}
	victim := list.Items[0]
	instanceID := victim.Status.ProviderID[strings.LastIndex(victim.Status.ProviderID, "/")+1:]
	restartController(t, point)
	kubectl(t, "delete", "nodeclaim", victim.Name, "--wait=false")
	waitKilled(t, point)
	restartController(t, "")
	waitApp(t, name, 1)
	eventually.Holds(t, "nodeclaim "+victim.Name+" and its node gone, its instance terminated once, the pod on a new one", func() (bool, string, error) {
		ok, why, err := nodeClaimsMatchInstances(name)
		gone := !slices.ContainsFunc(liveInstances(name), func(i awsemulator.EC2Instance) bool { return i.InstanceID == instanceID })
		return ok && gone && terminations(instanceID) == 1, fmt.Sprintf("%s; terminations of %s: %d", why, instanceID, terminations(instanceID)), err
	}, eventually.Timeout(waitTimeout))
}

// unregisteredNodes are the Provisioner's nodes still carrying the unregistered taint or without
// the registered label.
func unregisteredNodes(provisionerName string) ([]string, error) {
	list := &corev1.NodeList{}
	if err := stack.Env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisionerName}); err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		if !nodeclaims.Registered(&list.Items[i]) {
			out = append(out, list.Items[i].Name)
		}
	}
	return out, nil
}

// createKillpointProvisioner is a Provisioner of m5.xlarge nodes in one zone, so that identical
// nodes launch in one group.
func createKillpointProvisioner(t *testing.T, name string) {
	t.Helper()
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.xlarge"}},
		{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-west-2a"}},
	}})
}

// createKillpointApp is a Deployment of pods of 3 CPUs, one per m5.xlarge, for the Provisioner.
func createKillpointApp(t *testing.T, name string, replicas int32) {
	t.Helper()
	createObject(t, builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: replicas, Pod: builders.PodOptions{
		Labels: map[string]string{"app": name}, NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name},
		Requests: builders.Resources("cpu", "3"),
	}}))
}

// waitKilled waits until the controller killed itself at the point.
func waitKilled(t *testing.T, point string) {
	t.Helper()
	select {
	case <-stack.ControllerExited():
		t.Logf("the controller killed itself at %s", point)
	case <-time.After(waitTimeout):
		t.Fatalf("the controller never reached %s", point)
	}
}

// restartController kills the controller and starts it again, dying at the kill point when one
// is named.
func restartController(t *testing.T, point string) {
	t.Helper()
	stack.KillController()
	<-stack.ControllerExited()
	start := stack.StartController
	if point != "" {
		start = func(ctx context.Context) error { return stack.StartControllerDyingAt(ctx, point) }
	}
	if err := start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// nodeClaimsMatchInstances reports whether the Provisioner's NodeClaims, their recorded instances,
// its live instances and its Nodes all stand for the same machines: every NodeClaim recorded a
// live instance that no other recorded, and has its Node; no live instance or Node without one.
func nodeClaimsMatchInstances(provisionerName string) (bool, string, error) {
	return nodeClaimsMatchInstancesOn(stack, provisionerName)
}

// nodeClaimsMatchInstancesOn is nodeClaimsMatchInstances on a stack of the test's own.
func nodeClaimsMatchInstancesOn(stack *sandbox.Stack, provisionerName string) (bool, string, error) {
	list := &v1.NodeClaimList{}
	if err := stack.Env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisionerName}); err != nil {
		return false, "", err
	}
	var recorded []string
	for _, nc := range list.Items {
		if nc.DeletionTimestamp == nil {
			recorded = append(recorded, nc.Status.ProviderID)
		}
	}
	slices.Sort(recorded)
	ok, why, err := instancesMatchNodesOn(stack, provisionerName, len(recorded))
	var launched []string
	for _, instance := range liveInstancesOn(stack, provisionerName) {
		launched = append(launched, instance.ProviderID)
	}
	slices.Sort(launched)
	return ok && slices.Equal(recorded, launched), fmt.Sprintf("%s; nodeclaims' instances %v", why, recorded), err
}
