package expiration_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// disruptionFixture is a cluster with two nodes Karpenter launched, one of a Provisioner whose
// nodes expire at once and one of a Provisioner that consolidates, each running one pod that
// may also run on a spare node, Ready and open.
type disruptionFixture struct {
	env          *environment.Environment
	cloud        *fake.InstanceProvider
	instanceType *cloudprovider.InstanceType
	launched     []*corev1.Node
	spare        *corev1.Node
}

// newDisruptionFixture builds the fixture; finalized says whether the launched nodes carry the
// termination finalizer, as Karpenter puts it on.
func newDisruptionFixture(t *testing.T, finalized bool) *disruptionFixture {
	t.Helper()
	f := &disruptionFixture{
		env: environment.New(t, environment.Options{
			AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
		}),
		cloud:        fake.NewInstanceProvider(fake.InstanceProviderOptions{}),
		instanceType: fake.DefaultInstanceTypes()[3],
	}
	ctx := t.Context()
	expiring := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring"})
	expiring.Spec.TTLSecondsUntilExpired = ptr.To[int64](1)
	consolidating := builders.Provisioner(builders.ProvisionerOptions{Name: "consolidating"})
	consolidating.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true)}
	it := f.instanceType
	for _, p := range []*v1alpha5.Provisioner{expiring, consolidating} {
		if err := f.env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		created, err := f.cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: p.Name, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		node := environment.KwokNode(p.Name, map[string]string{
			v1alpha5.ProvisionerNameLabelKey: p.Name, corev1.LabelInstanceTypeStable: it.Name,
			corev1.LabelTopologyZone: created[0].Zone, v1alpha5.CapacityTypeLabelKey: created[0].CapacityType,
		}, it.Allocatable())
		node.Spec.ProviderID = created[0].ProviderID
		if finalized {
			node.Finalizers = []string{v1alpha5.TerminationFinalizer}
		}
		if err := f.env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		f.launched = append(f.launched, node)
		// Its pod may run on it or on the spare node, which does not exist yet.
		app := builders.Deployment(builders.DeploymentOptions{Name: p.Name, Replicas: 1, Pod: builders.PodOptions{
			Requests:         builders.Resources("cpu", "100m"),
			NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelHostname, node.Name, "spare")},
		}})
		if err := f.env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, f.env, p.Name, node.Name)
	}
	f.spare = environment.KwokNode("spare", map[string]string{corev1.LabelHostname: "spare"}, builders.Resources("cpu", "4", "memory", "16Gi"))
	if err := f.env.Client.Create(ctx, f.spare); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the spare node is Ready and open", func() (bool, string, error) {
		err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(f.spare), f.spare)
		return err == nil && nodes.IsReady(f.spare) && !nodes.AwaitsItsPods(f.spare), "", err
	})
	return f
}

// startDisruption runs expiry, consolidation and what they need to remove a node, quickly.
func (f *disruptionFixture) startDisruption(t *testing.T) {
	t.Helper()
	operatortest.Start(t, f.env, operatortest.Options{Controllers: controllers.Options{
		Enabled:                 []string{disruption.Name, termination.Name, readiness.Name, nodeclaimlifecycle.Name},
		CloudProvider:           cloudprovider.NewRegistry(),
		InstanceProvider:        f.cloud,
		Clock:                   clock.RealClock{},
		ExpirationPeriod:        200 * time.Millisecond,
		ConsolidationPeriod:     200 * time.Millisecond,
		ConsolidationMinNodeAge: time.Millisecond,
	}})
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
