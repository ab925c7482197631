package expiration_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// TestANodeWithoutItsTerminationFinalizerIsStillDrained is finding 34.7: a node Karpenter
// launched that lost its karpenter.sh/termination finalizer was deleted by expiry and by
// consolidation at once, without a drain, its PodDisruptionBudgets bypassed. The finalizer is
// put back on every node Karpenter launched, and neither deletes a node without it: each node
// is cordoned and drained, its instance terminated, and its pod runs on the node left.
func TestANodeWithoutItsTerminationFinalizerIsStillDrained(t *testing.T) {
	// Launched as Karpenter does, but the finalizer is gone.
	f := newDisruptionFixture(t, false)
	env, cloud, it, launched, spare := f.env, f.cloud, f.instanceType, f.launched, f.spare
	ctx := t.Context()
	f.startDisruption(t)

	for _, node := range launched {
		t.Run(node.Name, func(t *testing.T) {
			eventually.Holds(t, "node "+node.Name+" is cordoned for its drain", func() (bool, string, error) {
				events := &corev1.EventList{}
				if err := env.Client.List(ctx, events); err != nil {
					return false, "", err
				}
				return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
					return e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node.Name && e.Reason == termination.ReasonCordoned
				}), "", nil
			})
			eventually.Holds(t, "node "+node.Name+" is gone, its instance terminated", func() (bool, string, error) {
				current := &corev1.Node{}
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), current)
				if err != nil && !apierrors.IsNotFound(err) {
					return false, "", err
				}
				return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), node.Spec.ProviderID), "", nil
			})
			waitRunning(t, env, node.Labels[v1alpha5.ProvisionerNameLabelKey], spare.Name)
		})
	}
	t.Run("the finalizer is put back on a node Karpenter launched", func(t *testing.T) {
		created, err := cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: "kept", Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		node := environment.KwokNode("kept", map[string]string{v1alpha5.ProvisionerNameLabelKey: "kept"}, it.Allocatable())
		node.Spec.ProviderID = created[0].ProviderID
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		eventually.Holds(t, "node kept has the termination finalizer", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node)
			return err == nil && controllerutil.ContainsFinalizer(node, v1alpha5.TerminationFinalizer), fmt.Sprintf("finalizers %v", node.Finalizers), err
		})
	})
}
