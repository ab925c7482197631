package termination_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestARegisteringNodeIsLeftToItsNodeClaim: a node still carrying the taint it registered with,
// whose instance a NodeClaim recorded, gets the termination finalizer from that NodeClaim's
// registration, not from this controller (two writers of a fresh node conflicted, and a large
// launch registered minutes late); so does one registered a moment ago whose NodeClaim has not
// recorded its instance yet (a 500-node launch had the finalizer "put back" on 273 nodes so);
// without such a NodeClaim past that grace the finalizer is put back as before.
func TestARegisteringNodeIsLeftToItsNodeClaim(t *testing.T) {
	// Whole seconds: a stored creationTimestamp has no more.
	now := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name          string
		withNodeClaim bool
		age           time.Duration
		wantFinalizer bool
		wantRequeue   time.Duration
	}{
		{name: "its NodeClaim registers it", withNodeClaim: true, age: time.Hour},
		{name: "registered a moment ago, its instance not recorded yet", age: 10 * time.Second, wantRequeue: 50 * time.Second},
		{name: "no NodeClaim recorded its instance", age: time.Hour, wantFinalizer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"},
				CreationTimestamp: metav1.NewTime(now.Add(-tc.age))},
				Spec: corev1.NodeSpec{ProviderID: "fake:///fresh", Taints: []corev1.Taint{{Key: v1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}}}
			objects := []client.Object{node}
			if tc.withNodeClaim {
				objects = append(objects, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-fresh"}, Status: v1.NodeClaimStatus{ProviderID: node.Spec.ProviderID}})
			}
			c := kubefake.NewClientBuilder().WithObjects(objects...).Build()
			controller, err := termination.New(termination.Options{Client: c, Instances: fake.NewInstanceProvider(fake.InstanceProviderOptions{}),
				Recorder: record.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(now)})
			if err != nil {
				t.Fatal(err)
			}
			result, err := controller.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
			if err != nil {
				t.Fatal(err)
			}
			if result.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeued after %s, want %s", result.RequeueAfter, tc.wantRequeue)
			}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(node.Finalizers, v1alpha5.TerminationFinalizer); got != tc.wantFinalizer {
				t.Errorf("finalizers %v, want the termination finalizer %v", node.Finalizers, tc.wantFinalizer)
			}
		})
	}
}
