package scalablenodegroup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
)

func TestGroupNotGrantedToTheNamespaceIsNeverResized(t *testing.T) {
	for _, tc := range []struct{ name, granted string }{
		{name: "untagged group", granted: ""},
		{name: "group granted to another namespace", granted: "team-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ptr.To[int32](5), fake.NewNodeGroup(2, 0, 10))
			f.group.GrantTo(tc.granted)
			_, err, sng := f.reconcile(t)
			if err != nil {
				t.Fatalf("a missing grant is an error to retry: %v", err)
			}
			if calls := f.group.SetCalls(); len(calls) != 0 {
				t.Errorf("resized a group not granted to the namespace: %v", calls)
			}
			if sng.Status.Replicas != nil {
				t.Errorf("published status.replicas %d of a group not granted to the namespace", *sng.Status.Replicas)
			}
			if status, reason := condition(sng, string(v1alpha1.AbleToScale)); status != corev1.ConditionFalse || reason != scalablenodegroup.ReasonNotGranted {
				t.Errorf("AbleToScale = %s/%s, want False/%s", status, reason, scalablenodegroup.ReasonNotGranted)
			}
			if len(f.recorder.Events) != 1 {
				t.Fatalf("%d events, want one warning", len(f.recorder.Events))
			}
			if event := <-f.recorder.Events; !strings.Contains(event, "karpenter.sh/namespace=default") {
				t.Errorf("event %q does not say how to grant the group", event)
			}

			// Tagging the group is the grant; the periodic reconcile picks it up.
			f.group.GrantTo("default")
			if _, err, sng = f.reconcile(t); err != nil {
				t.Fatal(err)
			}
			if calls := f.group.SetCalls(); len(calls) != 1 || calls[0] != 5 {
				t.Errorf("SetDesiredReplicas calls once granted = %v, want [5]", calls)
			}
			if status, _ := condition(sng, string(v1alpha1.AbleToScale)); status != corev1.ConditionTrue {
				t.Errorf("AbleToScale = %s once granted, want True", status)
			}
		})
	}
}

// TestSecondObjectOnTheSameGroupIsRefused: two objects naming one group, by name and by ARN,
// would fight over its size; the older drives it, the newer is refused, whichever is
// reconciled first, and the refused one takes over when the owner goes.
func TestSecondObjectOnTheSameGroupIsRefused(t *testing.T) {
	const arn = "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:0f4c:autoScalingGroupName/workers"
	created := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	sng := func(name, id string, replicas int32, at metav1.Time) *v1alpha1.ScalableNodeGroup {
		return &v1alpha1.ScalableNodeGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: at},
			Spec:       v1alpha1.ScalableNodeGroupSpec{Type: v1alpha1.AWSEC2AutoScalingGroup, ID: id, Replicas: ptr.To(replicas)},
		}
	}
	for _, tc := range []struct {
		name         string
		first, other *v1alpha1.ScalableNodeGroup
	}{
		{"older by creation", sng("z-first", groupID, 3, created), sng("a-second", arn, 7, metav1.NewTime(created.Add(time.Second)))},
		{"same second, by name", sng("a-first", groupID, 3, created), sng("b-second", arn, 7, created)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := clientfake.NewClientBuilder().WithScheme(apis.NewScheme()).
				WithObjects(tc.first, tc.other).WithStatusSubresource(tc.first, tc.other).Build()
			cloud := fake.NewNodeGroup(2, 0, 10).GrantTo("default")
			factory := fake.NewFactory()
			factory.AddNodeGroup(string(v1alpha1.AWSEC2AutoScalingGroup), groupID, cloud)
			factory.AddNodeGroup(string(v1alpha1.AWSEC2AutoScalingGroup), arn, cloud)
			recorder := record.NewFakeRecorder(32)
			controller, err := scalablenodegroup.New(scalablenodegroup.Options{Client: kube, CloudProvider: factory, Recorder: recorder})
			if err != nil {
				t.Fatal(err)
			}
			reconcileAndGet := func(obj *v1alpha1.ScalableNodeGroup) *v1alpha1.ScalableNodeGroup {
				t.Helper()
				if _, err := controller.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}); err != nil {
					t.Fatal(err)
				}
				got := &v1alpha1.ScalableNodeGroup{}
				if err := kube.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
					t.Fatal(err)
				}
				return got
			}
			refused := reconcileAndGet(tc.other)
			if status, reason := condition(refused, string(v1alpha1.AbleToScale)); status != corev1.ConditionFalse || reason != scalablenodegroup.ReasonDuplicate {
				t.Errorf("second object: AbleToScale = %s/%s, want False/%s", status, reason, scalablenodegroup.ReasonDuplicate)
			}
			if calls := cloud.SetCalls(); len(calls) != 0 {
				t.Errorf("the second object resized the group: %v", calls)
			}
			owner := reconcileAndGet(tc.first)
			if status, _ := condition(owner, string(v1alpha1.AbleToScale)); status != corev1.ConditionTrue {
				t.Errorf("first object: AbleToScale = %s, want True", status)
			}
			if calls := cloud.SetCalls(); len(calls) != 1 || calls[0] != 3 {
				t.Errorf("SetDesiredReplicas calls = %v, want the first object's [3]", calls)
			}

			if err := kube.Delete(context.Background(), owner); err != nil {
				t.Fatal(err)
			}
			successor := reconcileAndGet(tc.other)
			if status, _ := condition(successor, string(v1alpha1.AbleToScale)); status != corev1.ConditionTrue {
				t.Errorf("second object once alone: AbleToScale = %s, want True", status)
			}
			if calls := cloud.SetCalls(); len(calls) != 2 || calls[1] != 7 {
				t.Errorf("SetDesiredReplicas calls = %v, want the second object's 7 once it is alone", calls)
			}
		})
	}
}
