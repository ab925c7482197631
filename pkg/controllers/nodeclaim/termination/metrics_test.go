package termination_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/termination"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/counters"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// staleNodeClaims reads the NodeClaim as it was: a cache that has not seen the last writes.
type staleNodeClaims struct {
	client.Client
	stale *v1.NodeClaim
}

func (c staleNodeClaims) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if nc, ok := obj.(*v1.NodeClaim); ok && key.Name == c.stale.Name {
		c.stale.DeepCopyInto(nc)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestTerminationCountedOnce: a deleted NodeClaim whose node and instance are gone counts once in
// karpenter_nodeclaims_terminated_total, by its Provisioner's name, capacity type and zone, and
// its termination's duration is observed once; reconciled again, and on a read from before its
// release, it counts nothing more.
func TestTerminationCountedOnce(t *testing.T) {
	const pool = "termination-counted"
	ctx := t.Context()
	c := kubefake.NewClientBuilder().Build()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	it := fake.DefaultInstanceTypes()[0]
	l := launcher.New(c, nil, cloud, 0)
	launched, err := l.LaunchNode(ctx, launcher.Request{
		Pool:       launcher.Pool{Provisioner: builders.Provisioner(builders.ProvisionerOptions{Name: pool})},
		Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes:      []*scheduling.NewNode{{Pool: pools.Provisioner(pool), InstanceTypes: []*cloudprovider.InstanceType{it}}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Its kubelet registered the node, and the lifecycle controller matched it.
	node, ok, _ := cloud.KubeletNode(launched.NodeClaim.Status.ProviderID)
	if !ok {
		t.Fatal("the launched instance does not run")
	}
	if err := c.Create(ctx, nodeclaims.Register(launched.NodeClaim, node)); err != nil {
		t.Fatal(err)
	}
	var list v1.NodeClaimList
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("%d nodeclaims (%v), want the launch's", len(list.Items), err)
	}
	nc := &list.Items[0]
	request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}
	if err := c.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	terminatedLabels := map[string]string{"nodepool": pool, "capacity_type": it.Offerings[0].CapacityType, "zone": it.Offerings[0].Zone}
	terminated := counters.MarkNow(t, "karpenter_nodeclaims_terminated_total", terminatedLabels)
	durations := counters.MarkNow(t, "karpenter_nodeclaims_termination_duration_seconds", map[string]string{"nodepool": pool})
	clock := clocktesting.NewFakeClock(time.Now())
	controller, err := termination.New(termination.Options{Client: c, Instances: cloud, Recorder: record.NewFakeRecorder(10), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// Reconciled until released: the node deleted (its own termination, played here, drains it
	// and lets it go), then the instance terminated.
	var beforeRelease *v1.NodeClaim
	for step := 0; ; step++ {
		stored := &v1.NodeClaim{}
		if err := c.Get(ctx, request.NamespacedName, stored); apierrors.IsNotFound(err) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if step == 5 {
			t.Fatalf("nodeclaim %s not released after %d reconciles", stored.Name, step)
		}
		beforeRelease = stored
		if _, err := controller.Reconcile(ctx, request); err != nil {
			t.Fatal(err)
		}
		drained := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), drained); err == nil && drained.DeletionTimestamp != nil {
			controllerutil.RemoveFinalizer(drained, v1alpha5.TerminationFinalizer)
			if err := c.Update(ctx, drained); err != nil {
				t.Fatal(err)
			}
		} else if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	expectCounted := func(when string) {
		t.Helper()
		if got := terminated.Increase(); got != 1 {
			t.Errorf("%s: karpenter_nodeclaims_terminated_total %v grew by %v, want 1", when, terminatedLabels, got)
		}
		if got := durations.Increase(); got != 1 {
			t.Errorf("%s: karpenter_nodeclaims_termination_duration_seconds{nodepool=%q} got %v samples, want 1", when, pool, got)
		}
	}
	expectCounted("once released")
	if _, err := controller.Reconcile(ctx, request); err != nil {
		t.Fatal(err)
	}
	expectCounted("reconciled again")
	stale, err := termination.New(termination.Options{Client: staleNodeClaims{Client: c, stale: beforeRelease}, Instances: cloud, Recorder: record.NewFakeRecorder(10), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Reconcile(ctx, request); err != nil {
		t.Fatal(err)
	}
	expectCounted("reconciled on a read from before the release")
}
