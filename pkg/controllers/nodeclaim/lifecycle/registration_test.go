package lifecycle_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestTheKubeletsNodeIsRegistered: the Node the kubelet of a launched instance registers (with
// the unregistered taint, none of the NodeClaim's own labels) is matched by provider id and
// registered: the NodeClaim's labels and taints synced onto it, the termination finalizer and
// the NodeClaim as owner set, Karpenter's not-ready taint added, the unregistered taint lifted;
// the NodeClaim records the node and turns Registered.
func TestTheKubeletsNodeIsRegistered(t *testing.T) {
	const pool = "registered"
	ctx := t.Context()
	c := kubefake.NewClientBuilder().Build()
	it := fake.DefaultInstanceTypes()[0]
	p := builders.Provisioner(builders.ProvisionerOptions{Name: pool, Labels: map[string]string{"team": "ml"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}})
	launched, kubeletNode := launchForKubelet(t, c, p)
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil || len(nodes.Items) != 0 {
		t.Fatalf("%d nodes (%v) after the launch, want none: the kubelet registers the node", len(nodes.Items), err)
	}
	// The kubelet knows nothing of the NodeClaim but what the user data told it.
	delete(kubeletNode.Labels, v1alpha5.CapacityTypeLabelKey)
	if err := c.Create(ctx, kubeletNode); err != nil {
		t.Fatal(err)
	}
	controller, err := lifecycle.New(lifecycle.Options{Client: c, Recorder: record.NewFakeRecorder(10),
		Clock: clocktesting.NewFakeClock(time.Now()), Timeouts: lifecycle.Timeouts{Initialization: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(launched)}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kubeletNode), node); err != nil {
		t.Fatal(err)
	}
	if !nodeclaims.Registered(node) || node.Labels["team"] != "ml" || node.Labels[v1alpha5.CapacityTypeLabelKey] != it.Offerings[0].CapacityType {
		t.Errorf("node labels %v taints %v, want registered with the NodeClaim's labels", node.Labels, node.Spec.Taints)
	}
	for _, key := range []string{"dedicated", v1alpha5.NotReadyTaintKey} {
		if !slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == key }) {
			t.Errorf("node taints %v, want %s", node.Spec.Taints, key)
		}
	}
	if !slices.Contains(node.Finalizers, v1.TerminationFinalizer) || len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != launched.UID {
		t.Errorf("finalizers %v owners %v, want the termination finalizer and the NodeClaim", node.Finalizers, node.OwnerReferences)
	}
	nc := &v1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(launched), nc); err != nil {
		t.Fatal(err)
	}
	if nc.Status.NodeName != node.Name || !nc.IsTrue(v1.ConditionTypeRegistered) {
		t.Errorf("nodeclaim node %q conditions %v, want %s Registered", nc.Status.NodeName, nc.Status.Conditions, node.Name)
	}
}

// TestARegistrationThatConflictsIsMadeAgainAtOnce: the node's first write conflicts (another
// writer changed the node since the cache was read, as the kubelet and the batch do while a
// node registers); the registration reads the node again and is made in the same reconcile,
// keeping the other writer's change. (It failed the reconcile, and a launch of hundreds of
// nodes registered minutes late behind the work queue's backoff.)
func TestARegistrationThatConflictsIsMadeAgainAtOnce(t *testing.T) {
	const pool = "conflicted"
	ctx := t.Context()
	apiServer := kubefake.NewClientBuilder().Build()
	interfered := false
	c := interceptor.NewClient(apiServer, interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if node, ok := obj.(*corev1.Node); ok && !interfered {
			interfered = true
			other := &corev1.Node{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(node), other); err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&other.ObjectMeta, "other-writer", "was here")
			if err := cl.Update(ctx, other); err != nil {
				return err
			}
		}
		return cl.Patch(ctx, obj, patch, opts...)
	}})
	launched, kubeletNode := launchForKubelet(t, apiServer, builders.Provisioner(builders.ProvisionerOptions{Name: pool}))
	if err := apiServer.Create(ctx, kubeletNode); err != nil {
		t.Fatal(err)
	}
	controller, err := lifecycle.New(lifecycle.Options{Client: c, Recorder: record.NewFakeRecorder(10),
		Clock: clocktesting.NewFakeClock(time.Now()), Timeouts: lifecycle.Timeouts{Initialization: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(launched)}); err != nil {
		t.Fatalf("Reconcile: %v, want the conflicting write made again", err)
	}
	node := &corev1.Node{}
	if err := apiServer.Get(ctx, client.ObjectKeyFromObject(kubeletNode), node); err != nil {
		t.Fatal(err)
	}
	if !interfered || !nodeclaims.Registered(node) || node.Annotations["other-writer"] != "was here" {
		t.Errorf("interfered %v; node annotations %v taints %v, want registered, the other writer's annotation kept", interfered, node.Annotations, node.Spec.Taints)
	}
}

// launchForKubelet launches a node of the Provisioner on the first of the fake catalogue's types
// and returns its NodeClaim and the Node its kubelet would register, not created yet.
func launchForKubelet(t *testing.T, c client.Client, p *v1alpha5.Provisioner) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	it := fake.DefaultInstanceTypes()[0]
	launched, err := launcher.New(c, nil, cloud, 0).LaunchNode(t.Context(), launcher.Request{
		Pool:       launcher.Pool{Provisioner: p},
		Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes:      []*scheduling.NewNode{{Pool: pools.Provisioner(p.Name), InstanceTypes: []*cloudprovider.InstanceType{it}}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	node, ok, _ := cloud.KubeletNode(launched.NodeClaim.Status.ProviderID)
	if !ok {
		t.Fatal("the launched instance does not run")
	}
	return launched.NodeClaim, node
}

// unsettled is a launcher whose resume never settles, as when the cloud refuses the first
// call's parameters again.
type unsettled struct{}

func (unsettled) Launching(*v1.NodeClaim) bool { return false }
func (unsettled) Resume(context.Context, *v1.NodeClaim) error {
	return launcher.ErrLaunchUnsettled
}

// TestALaunchThatCannotBeResumedTimesOut: a NodeClaim a stopped controller left unlaunched,
// whose resume keeps failing, is deleted once the launch timeout has passed (LaunchTimedOut),
// not resumed for ever; within it, it is resumed again. (A review found the timeout was never
// reached that way.)
func TestALaunchThatCannotBeResumedTimesOut(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		age         time.Duration
		wantDeleted bool
	}{
		{name: "within the launch timeout", age: time.Minute},
		{name: "past it", age: lifecycle.DefaultLaunchTimeout + time.Second, wantDeleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "left", UID: "left", CreationTimestamp: metav1.NewTime(now.Add(-tc.age)),
				Annotations: map[string]string{launcher.LaunchGroupAnnotationKey: "group"}}}
			c := kubefake.NewClientBuilder().WithObjects(nc).Build()
			recorder := record.NewFakeRecorder(10)
			controller, err := lifecycle.New(lifecycle.Options{Client: c, Recorder: recorder, Clock: clocktesting.NewFakeClock(now),
				Timeouts: lifecycle.Timeouts{Initialization: time.Hour}, Launches: unsettled{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := controller.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
				t.Fatal(err)
			}
			err = c.Get(t.Context(), client.ObjectKeyFromObject(nc), &v1.NodeClaim{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Errorf("deleted %v (%v), want %v", deleted, err, tc.wantDeleted)
			}
		})
	}
}
