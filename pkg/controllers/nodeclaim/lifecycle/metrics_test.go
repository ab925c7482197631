package lifecycle_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"karpenter.sh/karpenter/pkg/nodeclaims"
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

// TestRegistrationAndInitializationCountedOnce: the reconcile that marks a launched NodeClaim
// Registered and Initialized counts it once in karpenter_nodeclaims_registered_total and
// _initialized_total, by its Provisioner's name; reconciled again, and reconciled on a read of
// the NodeClaim from before those writes (the cache behind the controller's own write, as when
// the node's update requeues it at once), it counts nothing more.
func TestRegistrationAndInitializationCountedOnce(t *testing.T) {
	const pool = "lifecycle-counted"
	ctx := t.Context()
	c := kubefake.NewClientBuilder().Build()
	// The kubelet registered the node, the NodeClaim was synced onto it (before a crash, say)
	// and the readiness controller lifted the not-ready taint once the kubelet reported Ready.
	nodeClaim, node := launchForKubelet(t, c, builders.Provisioner(builders.ProvisionerOptions{Name: pool}))
	node = nodeclaims.Register(nodeClaim, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	var list v1.NodeClaimList
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("%d nodeclaims (%v), want the launch's", len(list.Items), err)
	}
	beforeRegistration := list.Items[0].DeepCopy()
	request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(beforeRegistration)}

	registered := counters.MarkNow(t, "karpenter_nodeclaims_registered_total", map[string]string{"nodepool": pool})
	initialized := counters.MarkNow(t, "karpenter_nodeclaims_initialized_total", map[string]string{"nodepool": pool})
	reconcileWith := func(reader client.Client) {
		t.Helper()
		controller, err := lifecycle.New(lifecycle.Options{Client: reader, Recorder: record.NewFakeRecorder(10),
			Clock: clocktesting.NewFakeClock(time.Now()), Timeouts: lifecycle.Timeouts{Initialization: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := controller.Reconcile(ctx, request); err != nil {
			t.Fatal(err)
		}
	}
	expectCounted := func(when string) {
		t.Helper()
		for family, mark := range map[string]counters.Mark{"karpenter_nodeclaims_registered_total": registered, "karpenter_nodeclaims_initialized_total": initialized} {
			if got := mark.Increase(); got != 1 {
				t.Errorf("%s: %s{nodepool=%q} grew by %v, want 1", when, family, pool, got)
			}
		}
	}
	reconcileWith(c)
	stored := &v1.NodeClaim{}
	if err := c.Get(ctx, request.NamespacedName, stored); err != nil {
		t.Fatal(err)
	}
	if !stored.IsTrue(v1.ConditionTypeRegistered) || !stored.IsTrue(v1.ConditionTypeInitialized) {
		t.Fatalf("conditions %v, want Registered and Initialized", stored.Status.Conditions)
	}
	expectCounted("once registered and initialized")
	reconcileWith(c)
	expectCounted("reconciled again")
	reconcileWith(staleNodeClaims{Client: c, stale: beforeRegistration})
	expectCounted("reconciled on a read from before the registration")
	if err := c.Get(ctx, request.NamespacedName, stored); err != nil || !stored.IsTrue(v1.ConditionTypeInitialized) {
		t.Errorf("conditions %v (%v), want them kept", stored.Status.Conditions, err)
	}
}
