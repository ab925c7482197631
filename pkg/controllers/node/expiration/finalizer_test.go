package expiration_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestANodeWithoutItsTerminationFinalizerIsStillDrained is finding 34.7: a node Karpenter
// launched that lost its karpenter.sh/termination finalizer was deleted by expiry and by
// consolidation at once, without a drain, its PodDisruptionBudgets bypassed. The finalizer is
// put back on every node Karpenter launched, and neither deletes a node without it: each node
// is cordoned and drained, its instance terminated, and its pod runs on the node left.
func TestANodeWithoutItsTerminationFinalizerIsStillDrained(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	expiring := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring"})
	expiring.Spec.TTLSecondsUntilExpired = ptr.To[int64](1)
	consolidating := builders.Provisioner(builders.ProvisionerOptions{Name: "consolidating"})
	consolidating.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true)}
	it := fake.DefaultInstanceTypes()[3]
	var launched []*corev1.Node
	instances := map[string]*cloudprovider.Instance{}
	for _, p := range []*v1alpha5.Provisioner{expiring, consolidating} {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		created, err := cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: p.Name, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		instance := created[0]
		// Launched as Karpenter does, but the finalizer is gone.
		node := environment.KwokNode(p.Name, map[string]string{
			v1alpha5.ProvisionerNameLabelKey: p.Name, corev1.LabelInstanceTypeStable: it.Name,
			corev1.LabelTopologyZone: instance.Zone, v1alpha5.CapacityTypeLabelKey: instance.CapacityType,
		}, it.Allocatable())
		node.Spec.ProviderID = instance.ProviderID
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		instances[node.Name] = instance
		launched = append(launched, node)
		// Its pod may run on it or on the spare node, which does not exist yet.
		app := builders.Deployment(builders.DeploymentOptions{Name: p.Name, Replicas: 1, Pod: builders.PodOptions{
			Requests:         builders.Resources("cpu", "100m"),
			NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelHostname, node.Name, "spare")},
		}})
		if err := env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, env, p.Name, node.Name)
	}
	spare := environment.KwokNode("spare", map[string]string{corev1.LabelHostname: "spare"}, builders.Resources("cpu", "4", "memory", "16Gi"))
	if err := env.Client.Create(ctx, spare); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the spare node is Ready and open", func() (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(spare), spare)
		return err == nil && nodes.IsReady(spare) && !nodes.AwaitsItsPods(spare), "", err
	})
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:                 []string{expiration.Name, consolidation.Name, termination.Name, readiness.Name, nodeclaimlifecycle.Name},
		CloudProvider:           cloudprovider.NewRegistry(),
		InstanceProvider:        cloud,
		Clock:                   clock.RealClock{},
		ExpirationPeriod:        200 * time.Millisecond,
		ConsolidationPeriod:     200 * time.Millisecond,
		ConsolidationMinNodeAge: time.Millisecond,
	}})

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
				return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), instances[node.Name].ProviderID), "", nil
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

// waitRunning waits for the one running pod of the deployment to be on the node.
func waitRunning(t *testing.T, env *environment.Environment, deployment, node string) {
	t.Helper()
	eventually.Holds(t, deployment+" runs on "+node, func() (bool, string, error) {
		list := &corev1.PodList{}
		if err := env.Client.List(t.Context(), list, client.MatchingLabels{"app": deployment}); err != nil {
			return false, "", err
		}
		for _, pod := range list.Items {
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && pod.Spec.NodeName == node {
				return true, "", nil
			}
		}
		return false, "", nil
	})
}
