package hydration_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/hydration"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestNodesLaunchedBeforeNodeClaimsGetOne: a node a Provisioner launched before NodeClaims (its
// label and instance, no NodeClaim) gets a NodeClaim built from it, Ready, and is owned by it;
// nothing is launched or deleted. A node no Provisioner launched gets none.
func TestNodesLaunchedBeforeNodeClaimsGetOne(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	it := fake.DefaultInstanceTypes()[0]
	instances, err := cloud.Create(ctx, cloudprovider.LaunchRequest{Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}, ProvisionerName: "default"})
	if err != nil {
		t.Fatal(err)
	}
	legacy := builders.Node(builders.NodeOptions{Name: instances[0].NodeName, Ready: corev1.ConditionTrue, Allocatable: it.Allocatable(), Labels: map[string]string{
		v1alpha5.ProvisionerNameLabelKey: "default", "team": "ml", corev1.LabelInstanceTypeStable: it.Name,
		corev1.LabelTopologyZone: instances[0].Zone, v1alpha5.CapacityTypeLabelKey: instances[0].CapacityType,
	}, Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}})
	legacy.Spec.ProviderID = instances[0].ProviderID
	other := builders.Node(builders.NodeOptions{Name: "node-group-node", Ready: corev1.ConditionTrue})
	other.Spec.ProviderID = "aws:///us-west-2a/i-0123456789abcdef0"
	for _, node := range []*corev1.Node{legacy, other} {
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		// A node's status is the kubelet's to write, through its subresource.
		status := node.Status
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			t.Fatal(err)
		}
		node.Status = status
		if err := env.Client.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{hydration.Name, lifecycle.Name}, CloudProvider: cloudprovider.NewRegistry(), InstanceProvider: cloud,
	}})

	nc := &v1.NodeClaim{}
	eventually.Holds(t, "a Ready nodeclaim for the legacy node, which it owns and labels registered and initialized", func() (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: legacy.Name}, nc); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(legacy), node); err != nil {
			return false, "", err
		}
		owned := len(node.OwnerReferences) == 1 && node.OwnerReferences[0].UID == nc.UID
		labelled := node.Labels[v1.NodeRegisteredLabelKey] == "true" && node.Labels[v1.NodeInitializedLabelKey] == "true"
		return owned && labelled && nc.IsTrue(v1.ConditionTypeReady), fmt.Sprintf("owners %v, labels %v, conditions %v", node.OwnerReferences, node.Labels, nc.Status.Conditions), nil
	})
	if nc.Status.ProviderID != legacy.Spec.ProviderID || nc.Status.NodeName != legacy.Name || nc.Labels["team"] != "ml" ||
		nc.Spec.NodeClassRef.Kind != "Provisioner" || nc.Spec.NodeClassRef.Name != "default" || len(nc.Spec.Taints) != 1 || nc.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("nodeclaim %+v, want the node's instance, labels, taints, allocatable and its Provisioner", nc)
	}
	var list v1.NodeClaimList
	if err := env.Client.List(ctx, &list); err != nil || len(list.Items) != 1 {
		t.Errorf("%d nodeclaims (%v), want the legacy node's only", len(list.Items), err)
	}
	if len(cloud.CreateCalls()) != 1 || len(cloud.DeleteCalls()) != 0 {
		t.Errorf("%d launches, %d terminations after the test's own launch; want none", len(cloud.CreateCalls())-1, len(cloud.DeleteCalls()))
	}
}
