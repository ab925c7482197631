package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	pkgdisruption "karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"

	"karpenter.sh/karpenter/pkg/test/watchcount"
	"karpenter.sh/karpenter/test/sandbox"
)

// TestControllerKilledMidDriftReplacementReplacesOnce (issue 37): a NodePool's node drifts (a
// template label changes); the disruption controller launches its replacement and, once the
// replacement is initialized, deletes the drifted NodeClaim — which an admission policy refuses
// until the controller is killed, so the kill lands in that window whatever the timing.
// Restarted, the controller removes the drifted node without a second replacement: two instances
// launched in all, the old one terminated once, the pod on the replacement, each NodeClaim with
// its instance and node. On a stack of its own (upstream's getting-started NodePool takes every
// pod that selects nothing), so it runs beside the other parallel tests.
func TestControllerKilledMidDriftReplacementReplacesOnce(t *testing.T) {
	t.Parallel()
	s := startOwnStack(t, sandbox.Options{ControllerBinary: controllerBinary})
	ctx := context.Background()
	createNodePoolExample(t, s, nil)
	const app = "drifting"
	if err := s.Env.Client.Create(ctx, builders.Deployment(builders.DeploymentOptions{Name: app, Namespace: sandbox.Namespace, Replicas: 1, Pod: builders.PodOptions{
		Labels: map[string]string{"app": app}, Requests: builders.Resources("cpu", "1"), NodeSelector: map[string]string{v1.NodePoolLabelKey: "default"},
	}})); err != nil {
		t.Fatal(err)
	}
	old := onlyNode(t, waitAppOn(t, s, app, 1))
	claims := poolClaimsOn(t, s, "default")
	if len(claims) != 1 || claims[0].Status.NodeName != old.Name {
		t.Fatalf("nodeclaims %v, want one, of node %s", claims, old.Name)
	}
	oldClaim := &claims[0]
	release := holdDeletion(t, s, v1.SchemeGroupVersion.Group, "nodeclaims", []client.Object{oldClaim})

	patch := []byte(`{"spec":{"template":{"metadata":{"labels":{"generation":"2"}}}}}`)
	if err := s.Env.Client.Patch(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	var replacement v1.NodeClaim
	eventually.Holds(t, "a replacement of node "+old.Name+" initialized", func() (bool, string, error) {
		var list v1.NodeClaimList
		if err := s.Env.Client.List(ctx, &list, client.MatchingLabels{v1.NodePoolLabelKey: "default"}); err != nil {
			return false, "", err
		}
		for _, nc := range list.Items {
			if nc.Annotations[v1alpha5.ReplacesAnnotationKey] == old.Name && nc.IsTrue(v1.ConditionTypeInitialized) {
				replacement = nc
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d nodeclaims", len(list.Items)), nil
	}, eventually.Timeout(waitTimeout))
	s.KillController()
	if err := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(oldClaim), &v1.NodeClaim{}); err != nil {
		t.Fatalf("the drifted nodeclaim before the restart: %v; want it there, held (the kill point was missed)", err)
	}
	release()
	if err := s.StartController(ctx); err != nil {
		t.Fatal(err)
	}

	eventually.Holds(t, "the drifted nodeclaim and its node gone", func() (bool, string, error) {
		errClaim := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(oldClaim), &v1.NodeClaim{})
		errNode := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Node{})
		if err := errorsOtherThanNotFound(errClaim, errNode); err != nil {
			return false, "", err
		}
		return apierrors.IsNotFound(errClaim) && apierrors.IsNotFound(errNode), fmt.Sprintf("nodeclaim: %v; node: %v", errClaim, errNode), nil
	}, eventually.Timeout(waitTimeout))
	if node := onlyNode(t, waitAppOn(t, s, app, 1)); node.Name != replacement.Status.NodeName {
		t.Errorf("the pod runs on %s, not on the replacement's node %s", node.Name, replacement.Status.NodeName)
	}
	if claims := poolClaimsOn(t, s, "default"); len(claims) != 1 || claims[0].Name != replacement.Name {
		t.Errorf("nodeclaims %v, want only the replacement %s", claimNames(claims), replacement.Name)
	}
	launched := 0
	for _, request := range s.Emulator.FleetRequests() {
		if !request.Replayed && request.TagSpecifications["instance"][v1.NodePoolLabelKey] == "default" {
			launched += len(request.InstanceIDs)
		}
	}
	if launched != 2 {
		t.Errorf("%d instances launched for the NodePool, want 2 (the node and its one replacement)", launched)
	}
	if n := terminationsOn(s, instanceIDOf(old)); n != 1 {
		t.Errorf("the drifted node's instance terminated %d times, want once", n)
	}
}

// poolClaimsOn are the NodePool's NodeClaims on the stack, once every one is Ready, not being
// deleted, and its instance running.
func poolClaimsOn(t *testing.T, s *sandbox.Stack, nodePool string) []v1.NodeClaim {
	t.Helper()
	var list v1.NodeClaimList
	eventually.Holds(t, "the NodeClaims of nodepool "+nodePool+" Ready", func() (bool, string, error) {
		if err := s.Env.Client.List(context.Background(), &list, client.MatchingLabels{v1.NodePoolLabelKey: nodePool}); err != nil {
			return false, "", err
		}
		running := map[string]bool{}
		for _, instance := range s.Emulator.EC2Instances() {
			running[instance.ProviderID] = instance.State == "running"
		}
		ready := len(list.Items) > 0
		for _, nc := range list.Items {
			ready = ready && nc.DeletionTimestamp == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeReady) && running[nc.Status.ProviderID]
		}
		return ready, fmt.Sprintf("%v", claimNames(list.Items)), nil
	}, eventually.Timeout(waitTimeout))
	return list.Items
}

func claimNames(claims []v1.NodeClaim) []string {
	names := make([]string, len(claims))
	for i, nc := range claims {
		names[i] = nc.Name
	}
	return names
}

// errorsOtherThanNotFound is the first error that is not a NotFound.
func errorsOtherThanNotFound(errs ...error) error {
	for _, err := range errs {
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// TestAMIDriftReplacesEveryNodeWithinItsBudget (issue 37): the getting-started NodePool's three
// nodes boot the image behind al2023@latest; the emulator's SSM parameter behind it moves to
// another image (the earlier release's, as AWS moves it to a new one), so every NodeClaim drifts
// (AMIDrift) and is replaced by one booting the image the parameter names now — never more than
// the NodePool's budget of one disrupted at a time, and never fewer than two of the three pods
// (one per node) Running, which their PodDisruptionBudget (minAvailable 2) asks, both asserted
// from watches rather than polls. The controller is restarted after the move, as a rollout would
// restart it: a running controller keeps a parameter for an hour
// (TestAMovedLatestIsResolvedWithinTheHour), a restarted one reads it at its first resolution.
func TestAMIDriftReplacesEveryNodeWithinItsBudget(t *testing.T) {
	t.Parallel()
	s := startOwnStack(t, sandbox.Options{ControllerBinary: controllerBinary})
	ctx := context.Background()
	createNodePoolExample(t, s, func(object *unstructured.Unstructured) error {
		if object.GetKind() != "NodePool" {
			return nil
		}
		return unstructured.SetNestedSlice(object.Object, []any{map[string]any{"nodes": "1"}}, "spec", "disruption", "budgets")
	})
	const app = "latest-ami"
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: sandbox.Namespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}
	if err := s.Env.Client.Create(ctx, budget); err != nil {
		t.Fatal(err)
	}
	if err := s.Env.Client.Create(ctx, builders.Deployment(builders.DeploymentOptions{Name: app, Namespace: sandbox.Namespace, Replicas: 3, Pod: builders.PodOptions{
		Labels: map[string]string{"app": app}, Requests: builders.Resources("cpu", "1"), NodeSelector: map[string]string{v1.NodePoolLabelKey: "default"},
		PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": app})},
	}})); err != nil {
		t.Fatal(err)
	}
	old := distinctNodes(t, waitAppOn(t, s, app, 3), 3)
	claims := poolClaimsOn(t, s, "default")
	oldClaims, oldImage := map[string]bool{}, claims[0].Status.ImageID
	for _, nc := range claims {
		oldClaims[nc.Name] = true
		if nc.Status.ImageID != oldImage || oldImage == "" {
			t.Fatalf("nodeclaims boot images %q and %q, want one image", oldImage, nc.Status.ImageID)
		}
	}
	minor := kubernetesMinor(t, s)
	latest := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", minor)
	earlier := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-%s-v20260415/image_id", minor, minor)
	newImage, ok := s.Emulator.SSMParameter(earlier)
	if behind, _ := s.Emulator.SSMParameter(latest); behind != oldImage || !ok || newImage == oldImage {
		t.Fatalf("%s holds %q, %s %q (found %t); want the nodes' image %s behind the first and another behind the second", latest, behind, earlier, newImage, ok, oldImage)
	}
	mostDisrupted := watchcount.Disrupted(t, s.Env.Config, "default")
	fewestRunning := watchcount.Available(t, s.Env.Config, sandbox.Namespace, "app="+app, 3)

	s.Emulator.SetSSMParameter(latest, newImage)
	s.KillController()
	if err := s.StartController(ctx); err != nil {
		t.Fatal(err)
	}
	amiDrifted := false
	eventually.Holds(t, "every nodeclaim replaced by one booting the image now behind "+latest, func() (bool, string, error) {
		var list v1.NodeClaimList
		if err := s.Env.Client.List(ctx, &list, client.MatchingLabels{v1.NodePoolLabelKey: "default"}); err != nil {
			return false, "", err
		}
		replaced := 0
		var state []string
		for _, nc := range list.Items {
			if drifted := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDrifted); drifted != nil && drifted.Status == metav1.ConditionTrue && drifted.Reason == pkgdisruption.ReasonAMIDrifted {
				amiDrifted = true
			}
			if !oldClaims[nc.Name] && nc.DeletionTimestamp == nil && nc.IsTrue(v1.ConditionTypeInitialized) && nc.Status.ImageID == newImage {
				replaced++
			}
			state = append(state, fmt.Sprintf("%s %s", nc.Name, nc.Status.ImageID))
		}
		return replaced == 3 && len(list.Items) == 3, fmt.Sprintf("%v", state), nil
	}, eventually.Timeout(4*waitTimeout))
	for _, node := range old {
		eventually.Holds(t, "drifted node "+node.Name+" gone", func() (bool, string, error) {
			err := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
			return apierrors.IsNotFound(err), fmt.Sprintf("%v", err), client.IgnoreNotFound(err)
		}, eventually.Timeout(waitTimeout))
	}
	distinctNodes(t, waitAppOn(t, s, app, 3), 3)
	if !amiDrifted {
		t.Error("no nodeclaim was seen Drifted with reason " + pkgdisruption.ReasonAMIDrifted)
	}
	if most := mostDisrupted(); most > 1 {
		t.Errorf("%d nodes disrupted at once, over the budget of 1", most)
	}
	if fewest := fewestRunning(); fewest < 2 {
		t.Errorf("%d of the 3 pods Running at one point, want at least 2", fewest)
	}
}

// createNodePoolExample creates the getting-started NodePool and EC2NodeClass on the stack, each
// first changed by edit when given.
func createNodePoolExample(t *testing.T, s *sandbox.Stack, edit func(*unstructured.Unstructured) error) {
	t.Helper()
	objects, err := sandbox.NodePoolExample()
	if err != nil {
		t.Fatal(err)
	}
	for _, object := range objects {
		if edit != nil {
			if err := edit(object); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Env.Client.Create(context.Background(), object); err != nil {
			t.Fatal(err)
		}
	}
}

// kubernetesMinor is the stack's Kubernetes version, major.minor, whose AMIs aliases name.
func kubernetesMinor(t *testing.T, s *sandbox.Stack) string {
	t.Helper()
	servers, err := discovery.NewDiscoveryClientForConfig(s.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	version, err := servers.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return version.Major + "." + strings.TrimSuffix(version.Minor, "+")
}
