package termination_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// launchedNode launches an instance of a Provisioner's in the fake cloud and returns its node,
// with the termination finalizer.
func launchedNode(t *testing.T, cloud *fake.InstanceProvider) *corev1.Node {
	t.Helper()
	it := fake.DefaultInstanceTypes()[0]
	launched, err := cloud.Create(t.Context(), cloudprovider.LaunchRequest{ProvisionerName: "default",
		Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: launched[0].NodeName, Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"},
		Finalizers: []string{v1alpha5.TerminationFinalizer}}, Spec: corev1.NodeSpec{ProviderID: launched[0].ProviderID}}
}

// TestANodeWhoseInstanceShutsDownIsReleasedWithoutADrain: the cloud shuts the node's instance
// down (reclaimed, or terminated by hand): its pods stopped with it, and evicting them would wait
// for a kubelet that is not there to confirm. The node is released at once, as one whose
// instance is gone is, now that a shutting-down instance is no longer read as gone.
func TestANodeWhoseInstanceShutsDownIsReleasedWithoutADrain(t *testing.T) {
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{ShutDownPending: true})
	node := launchedNode(t, cloud)
	if err := cloud.Delete(ctx, node.Spec.ProviderID); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node.Name}}
	c := kubefake.NewClientBuilder().WithObjects(node, pod).Build()
	if err := c.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	controller, err := termination.New(termination.Options{Client: c, Instances: cloud, Recorder: record.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("node read %v, want it released", err)
	}
	stored := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stored); err != nil || stored.DeletionTimestamp != nil {
		t.Errorf("pod %v (%v), want it left alone: its node is released, not drained", stored.DeletionTimestamp, err)
	}
}
