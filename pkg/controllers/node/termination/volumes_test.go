package termination_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

func attachment(name, node, pv string) storagev1.VolumeAttachment {
	return storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
}

func TestAwaitedAttachments(t *testing.T) {
	inline := attachment("inline", "n", "")
	inline.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}}
	attachments := []storagev1.VolumeAttachment{attachment("b", "n", "pv-b"), attachment("a", "n", "pv-a"), attachment("other", "m", "pv-c"), attachment("kept", "n", "pv-kept"), inline}
	for _, tc := range []struct {
		name    string
		staying sets.Set[string]
		want    []string
	}{
		// An inline volume held the instance for ever when a DaemonSet's pod used it and no
		// deadline bounded the drain (found by a review).
		{name: "every attachment of the node's persistent volumes", staying: sets.New[string](), want: []string{"a", "b", "kept"}},
		{name: "but those of volumes pods staying on it use", staying: sets.New("pv-kept"), want: []string{"a", "b"}},
	} {
		if got := termination.AwaitedAttachments(attachments, "n", tc.staying); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTheInstanceWaitsForItsVolumesToDetach: a drained node's instance is terminated only once
// its volume attachments are gone (but those of a volume a DaemonSet's pod staying on it uses),
// or its drain deadline passed, as upstream waits. The code before terminated it at once.
func TestTheInstanceWaitsForItsVolumesToDetach(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deadline is the Provisioner's terminationGracePeriodSeconds, nil for none; passed
		// steps the clock past it.
		deadline *int64
		passed   bool
	}{
		{name: "without a deadline"},
		{name: "before the deadline", deadline: ptr.To[int64](600)},
		{name: "past the deadline", deadline: ptr.To[int64](600), passed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Now().Truncate(time.Second)
			clk := clocktesting.NewFakeClock(now)
			cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
			node := launchedNode(t, cloud)
			provisioner := &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha5.ProvisionerSpec{TerminationGracePeriodSeconds: tc.deadline}}
			daemon := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{NodeName: node.Name, Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "agent-state"}}}}}}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "agent-state", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-agent"}}
			data, agent := attachment("data", node.Name, "pv-data"), attachment("agent", node.Name, "pv-agent")
			c := kubefake.NewClientBuilder().WithObjects(node, provisioner, daemon, claim, &data, &agent).Build()
			if err := c.Delete(ctx, node); err != nil {
				t.Fatal(err)
			}
			if tc.passed {
				clk.Step(time.Hour)
			}
			recorder := record.NewFakeRecorder(20)
			controller, err := termination.New(termination.Options{Client: c, Instances: cloud, Recorder: recorder, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
			reconcileOnce := func() reconcile.Result {
				t.Helper()
				result, err := controller.Reconcile(ctx, request)
				if err != nil {
					t.Fatal(err)
				}
				return result
			}
			// Cordoned and drained (nothing to evict) in the first passes; then it waits.
			var result reconcile.Result
			for range 3 {
				result = reconcileOnce()
			}
			if tc.passed {
				if calls := cloud.DeleteCalls(); len(calls) != 1 {
					t.Errorf("past the deadline: %d terminations, want 1 without waiting", len(calls))
				}
				return
			}
			if calls := cloud.DeleteCalls(); len(calls) != 0 || result.RequeueAfter == 0 {
				t.Fatalf("terminated %v (requeued after %s) with volume data attached, want a wait", calls, result.RequeueAfter)
			}
			// Looked at again while it waits: the Event said so once.
			reconcileOnce()
			reconcileOnce()
			if told := events.Count(recorder, termination.ReasonAwaitingVolumeDetachment); told != 1 {
				t.Errorf("%d %s Events over the looks at the same attachment while it waits, want 1", told, termination.ReasonAwaitingVolumeDetachment)
			}
			if err := c.Delete(ctx, &data); err != nil {
				t.Fatal(err)
			}
			reconcileOnce()
			if calls := cloud.DeleteCalls(); len(calls) != 1 {
				t.Errorf("%d terminations once only the DaemonSet's volume is attached, want 1", len(calls))
			}
			if err := c.Get(ctx, request.NamespacedName, &corev1.Node{}); !apierrors.IsNotFound(err) {
				t.Errorf("node read %v, want it released", err)
			}
		})
	}
}
