package termination_test

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/termination"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestANodeClaimStaysUntilItsInstanceIsGone: a deleted NodeClaim's instance is terminated once,
// and the NodeClaim keeps its finalizer while the instance shuts down (it may still hold its
// volumes and network interfaces, and is billed), as upstream's; it is released once the cloud
// says the instance is gone. The AWS adapter read a shutting-down instance as gone
// (pkg/cloudprovider/aws TestDeleteIsIdempotentAndListShowsTheClustersInstances's new check fails on the code before).
func TestANodeClaimStaysUntilItsInstanceIsGone(t *testing.T) {
	ctx := t.Context()
	c := kubefake.NewClientBuilder().Build()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{ShutDownPending: true})
	it := fake.DefaultInstanceTypes()[0]
	launched, err := launcher.New(c, nil, cloud, 0).LaunchNode(ctx, launcher.Request{
		Pool:       launcher.Pool{Provisioner: builders.Provisioner(builders.ProvisionerOptions{Name: "default"})},
		Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes:      []*scheduling.NewNode{{Pool: pools.Provisioner("default"), InstanceTypes: []*cloudprovider.InstanceType{it}}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	nc := launched.NodeClaim
	if err := c.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	controller, err := termination.New(termination.Options{Client: c, Instances: cloud, Recorder: record.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}
	for range 3 {
		if _, err := controller.Reconcile(ctx, request); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, request.NamespacedName, &v1.NodeClaim{}); err != nil {
		t.Fatalf("nodeclaim read %v while its instance shuts down, want it kept", err)
	}
	if calls := cloud.DeleteCalls(); len(calls) != 1 {
		t.Errorf("instance terminated %d times, want once", len(calls))
	}
	if err := cloud.MarkTerminated(nc.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Reconcile(ctx, request); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, request.NamespacedName, &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("nodeclaim read %v once its instance is gone, want it released", err)
	}
}
