package garbagecollection_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/node/garbagecollection"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestCollectsAfterACrash runs the loop in the operator against a real apiserver: the instance
// a crash left without a node is terminated, the node whose instance is gone deleted, and what
// is consistent kept.
func TestCollectsAfterACrash(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := t.Context()
	launched := clocktesting.NewFakePassiveClock(time.Now().Add(-time.Hour))
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{Clock: launched})
	orphan := launch(t, cloud)
	registered := launch(t, cloud)
	launched.SetTime(time.Now())
	fresh := launch(t, cloud)
	registeredNode := karpenterNode("registered", registered.ProviderID)
	goneNode := karpenterNode("gone", "fake:///us-west-2a/i-gone")
	for _, object := range []client.Object{&registeredNode, &goneNode, builders.Provisioner(builders.ProvisionerOptions{Name: "default"})} {
		if err := env.Client.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{garbagecollection.Name}, CloudProvider: cloudprovider.NewRegistry(), InstanceProvider: cloud,
		GarbageCollectionPeriod: 100 * time.Millisecond, GarbageCollectionGrace: 2 * time.Minute,
	}})

	eventually.Holds(t, "the orphaned instance is terminated and the node without an instance deleted", func() (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(&goneNode), &corev1.Node{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), orphan.ProviderID), "", nil
	})
	if deleted := cloud.DeleteCalls(); slices.Contains(deleted, registered.ProviderID) || slices.Contains(deleted, fresh.ProviderID) {
		t.Errorf("terminated %v: the registered instance or the one still in its grace period among them", deleted)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&registeredNode), &corev1.Node{}); err != nil {
		t.Errorf("the registered node: %v", err)
	}
	eventually.Holds(t, "an InstanceWithoutNode event on the Provisioner", func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(ctx, events); err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Provisioner" && e.Reason == garbagecollection.ReasonInstanceWithoutNode
		}), "", nil
	})
}
