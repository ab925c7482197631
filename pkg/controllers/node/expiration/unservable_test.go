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
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestAPodNoProvisionerServesFreezesNeitherExpiryNorConsolidation is finding 34.6: one pod
// that no Provisioner could ever give a node (a typo in its node selector) waits for capacity
// for ever, and while any pod waited, expiry and consolidation did nothing, for the whole
// cluster. Only pods some Provisioner could serve hold them back: the expired node and the
// underused one both go.
func TestAPodNoProvisionerServesFreezesNeitherExpiryNorConsolidation(t *testing.T) {
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
	for _, p := range []*v1alpha5.Provisioner{expiring, consolidating} {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		created, err := cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: p.Name, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		node := environment.KwokNode(p.Name, map[string]string{
			v1alpha5.ProvisionerNameLabelKey: p.Name, corev1.LabelInstanceTypeStable: it.Name,
			corev1.LabelTopologyZone: created[0].Zone, v1alpha5.CapacityTypeLabelKey: created[0].CapacityType,
		}, it.Allocatable())
		node.Spec.ProviderID = created[0].ProviderID
		node.Finalizers = []string{v1alpha5.TerminationFinalizer}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
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
	// No Provisioner launches in that zone, and no node is there.
	typo := builders.Deployment(builders.DeploymentOptions{Name: "typo", Replicas: 1, Pod: builders.PodOptions{
		NodeSelector: map[string]string{corev1.LabelTopologyZone: "us-west-2z"},
	}})
	if err := env.Client.Create(ctx, typo); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the typo's pod waits for capacity", func() (bool, string, error) {
		list := &corev1.PodList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{"app": "typo"}); err != nil {
			return false, "", err
		}
		return len(list.Items) == 1 && pods.IsProvisionable(&list.Items[0]), fmt.Sprintf("%d pods", len(list.Items)), nil
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
			eventually.Holds(t, "node "+node.Name+" is gone, its instance terminated", func() (bool, string, error) {
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
				if err != nil && !apierrors.IsNotFound(err) {
					return false, "", err
				}
				return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), node.Spec.ProviderID), "", nil
			})
			waitRunning(t, env, node.Labels[v1alpha5.ProvisionerNameLabelKey], spare.Name)
		})
	}
}
