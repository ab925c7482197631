package scalablenodegroup_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
)

const groupID = "workers"

type fixture struct {
	client   client.Client
	group    *fake.NodeGroup
	recorder *record.FakeRecorder
	ctrl     *scalablenodegroup.Controller
}

func newFixture(t *testing.T, replicas *int32, cloud *fake.NodeGroup) *fixture {
	t.Helper()
	sng := &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: "default"},
		Spec:       v1alpha1.ScalableNodeGroupSpec{Type: v1alpha1.AWSEC2AutoScalingGroup, ID: groupID, Replicas: replicas},
	}
	kube := clientfake.NewClientBuilder().WithScheme(apis.NewScheme()).
		WithObjects(sng).WithStatusSubresource(sng).Build()
	recorder := record.NewFakeRecorder(32)
	controller, err := scalablenodegroup.New(scalablenodegroup.Options{Client: kube, CloudProvider: factoryWith(cloud), Recorder: recorder, Period: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{client: kube, group: cloud, recorder: recorder, ctrl: controller}
}

//nolint:staticcheck // ST1008: Reconcile's own (result, error) come first, the object read after it last.
func (f *fixture) reconcile(t *testing.T) (reconcile.Result, error, *v1alpha1.ScalableNodeGroup) {
	t.Helper()
	key := types.NamespacedName{Namespace: "default", Name: "workers"}
	result, err := f.ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	sng := &v1alpha1.ScalableNodeGroup{}
	if getErr := f.client.Get(context.Background(), key, sng); getErr != nil {
		t.Fatal(getErr)
	}
	return result, err, sng
}

func condition(sng *v1alpha1.ScalableNodeGroup, typ string) (corev1.ConditionStatus, string) {
	c := sng.StatusConditions().GetCondition(v1alpha1.AbleToScale)
	if typ == string(v1alpha1.Stabilized) {
		c = sng.StatusConditions().GetCondition(v1alpha1.Stabilized)
	}
	if c == nil {
		return "", ""
	}
	return c.Status, c.Reason
}

func TestResizesToSpecAndReportsObservedReplicas(t *testing.T) {
	f := newFixture(t, ptr.To[int32](5), fake.NewNodeGroup(2, 0, 10))
	result, err, sng := f.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != 10*time.Second {
		t.Errorf("requeue after %v, want the 10s period so outside changes show", result.RequeueAfter)
	}
	if calls := f.group.SetCalls(); len(calls) != 1 || calls[0] != 5 {
		t.Errorf("SetDesiredReplicas calls = %v, want [5]", calls)
	}
	if got := ptr.Deref(sng.Status.Replicas, -1); got != 2 {
		t.Errorf("status.replicas = %d, want the 2 in service", got)
	}
	if status, reason := condition(sng, string(v1alpha1.Stabilized)); status != corev1.ConditionFalse || reason != scalablenodegroup.ReasonInFlight {
		t.Errorf("Stabilized = %s/%s, want False/%s while instances launch", status, reason, scalablenodegroup.ReasonInFlight)
	}
	if !sng.StatusConditions().IsHappy() {
		t.Errorf("Ready is not true: %+v", sng.Status.Conditions)
	}

	f.group.Converge()
	_, err, sng = f.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(sng.Status.Replicas, -1); got != 5 {
		t.Errorf("status.replicas = %d after the group converged, want 5", got)
	}
	if calls := f.group.SetCalls(); len(calls) != 1 {
		t.Errorf("resized again once converged: %v", calls)
	}
	if status, _ := condition(sng, string(v1alpha1.Stabilized)); status != corev1.ConditionTrue {
		t.Errorf("Stabilized = %s once converged, want True", status)
	}
}

// TestUnsetReplicasAdoptsTheCloudSize: a group whose size nobody stated takes the cloud's,
// so that its scale subresource never reports an unknown size as zero.
func TestUnsetReplicasAdoptsTheCloudSize(t *testing.T) {
	f := newFixture(t, nil, fake.NewNodeGroup(20, 0, 30))
	_, err, sng := f.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(sng.Spec.Replicas, -1); got != 20 {
		t.Errorf("spec.replicas = %d after adoption, want the cloud's 20", got)
	}
	if got := ptr.Deref(sng.Status.Replicas, -1); got != 20 {
		t.Errorf("status.replicas = %d, want 20", got)
	}
	if calls := f.group.SetCalls(); len(calls) != 0 {
		t.Errorf("resized a group while adopting its size: %v", calls)
	}
	if len(f.recorder.Events) != 1 {
		t.Fatalf("%d events, want one Adopted", len(f.recorder.Events))
	}
	if event := <-f.recorder.Events; !strings.Contains(event, "Normal Adopted Adopted spec.replicas 20 from the desired capacity of") {
		t.Errorf("event %q, want Adopted naming 20 and the group", event)
	}
	// Adopted once: the next reconcile changes nothing and says nothing.
	if _, err, sng = f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if calls := f.group.SetCalls(); len(calls) != 0 || ptr.Deref(sng.Spec.Replicas, -1) != 20 || len(f.recorder.Events) != 0 {
		t.Errorf("after adoption: SetDesiredReplicas calls %v, spec.replicas %v, %d events; want none, 20, none", calls, sng.Spec.Replicas, len(f.recorder.Events))
	}
}

// TestAdoptionYieldsToAConcurrentWrite: spec.replicas set by someone else between the read and
// the adoption wins; the adoption fails and is retried from fresh state.
func TestAdoptionYieldsToAConcurrentWrite(t *testing.T) {
	f := newFixture(t, nil, fake.NewNodeGroup(20, 0, 30))
	stale := &v1alpha1.ScalableNodeGroup{}
	key := types.NamespacedName{Namespace: "default", Name: "workers"}
	if err := f.client.Get(context.Background(), key, stale); err != nil {
		t.Fatal(err)
	}
	scaled := stale.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](25)
	if err := f.client.Update(context.Background(), scaled); err != nil {
		t.Fatal(err)
	}
	adopting, err := scalablenodegroup.New(scalablenodegroup.Options{
		Client: staleReads{Client: f.client, stale: stale}, CloudProvider: factoryWith(f.group), Recorder: f.recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adopting.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); !apierrors.IsConflict(err) {
		t.Fatalf("adopting over a concurrent write returned %v, want a conflict", err)
	}
	sng := &v1alpha1.ScalableNodeGroup{}
	if err := f.client.Get(context.Background(), key, sng); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(sng.Spec.Replicas, -1); got != 25 {
		t.Errorf("spec.replicas = %d, want the concurrent 25", got)
	}
}

// staleReads serves one stale copy of the group, as a cache that has not seen a write yet.
type staleReads struct {
	client.Client
	stale *v1alpha1.ScalableNodeGroup
}

func (s staleReads) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.stale.DeepCopyInto(obj.(*v1alpha1.ScalableNodeGroup))
	return nil
}

func factoryWith(group *fake.NodeGroup) *fake.Factory {
	factory := fake.NewFactory()
	// The fixture's object lives in default, to which the group is granted.
	factory.AddNodeGroup(string(v1alpha1.AWSEC2AutoScalingGroup), groupID, group.GrantTo("default"))
	return factory
}

func TestOutsideChangeIsReflectedAndReconciledBack(t *testing.T) {
	f := newFixture(t, ptr.To[int32](3), fake.NewNodeGroup(3, 0, 10))
	if _, err, _ := f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	f.group.SetDesiredOutOfBand(6)
	f.group.Converge()
	_, err, sng := f.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(sng.Status.Replicas, -1); got != 6 {
		t.Errorf("status.replicas = %d, want the 6 someone else launched", got)
	}
	if calls := f.group.SetCalls(); len(calls) != 1 || calls[0] != 3 {
		t.Errorf("SetDesiredReplicas calls = %v, want [3]: spec.replicas is the desired state", calls)
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		spec       int32
		prepare    func(*fake.NodeGroup)
		wantReason string
		wantErr    bool
	}{
		{
			name: "out of bounds is not forced", spec: 20,
			wantReason: scalablenodegroup.ReasonOutOfBounds,
		},
		{
			name: "access denied names the action", spec: 4,
			prepare: func(g *fake.NodeGroup) {
				g.SetError(&cloudprovider.AccessDeniedError{Action: "autoscaling:DescribeAutoScalingGroups", Resource: groupID, Err: errors.New("denied")})
			},
			wantReason: scalablenodegroup.ReasonAccessDenied, wantErr: true,
		},
		{
			name: "cloud errors retry with backoff", spec: 4,
			prepare:    func(g *fake.NodeGroup) { g.SetError(errors.New("503 service unavailable")) },
			wantReason: scalablenodegroup.ReasonCloudError, wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ptr.To(tc.spec), fake.NewNodeGroup(2, 0, 10))
			if tc.prepare != nil {
				tc.prepare(f.group)
			}
			_, err, sng := f.reconcile(t)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %t", err, tc.wantErr)
			}
			status, reason := condition(sng, string(v1alpha1.AbleToScale))
			if status != corev1.ConditionFalse || reason != tc.wantReason {
				t.Errorf("AbleToScale = %s/%s, want False/%s", status, reason, tc.wantReason)
			}
			if sng.StatusConditions().IsHappy() {
				t.Error("Ready is true while the group cannot be scaled")
			}
			if len(f.recorder.Events) != 1 {
				t.Fatalf("%d events, want one warning", len(f.recorder.Events))
			}
			<-f.recorder.Events
			// The same failure again is not a new event.
			_, _, _ = f.reconcile(t)
			if len(f.recorder.Events) != 0 {
				t.Errorf("a persistent failure emitted another event: %s", <-f.recorder.Events)
			}
		})
	}
}

func TestBusyGroupIsNotAnError(t *testing.T) {
	f := newFixture(t, ptr.To[int32](4), fake.NewNodeGroup(2, 0, 10))
	f.group.SetBusy("update 1234 in progress")
	_, err, sng := f.reconcile(t)
	if err != nil {
		t.Fatalf("a busy group is an error: %v", err)
	}
	if status, reason := condition(sng, string(v1alpha1.Stabilized)); status != corev1.ConditionFalse || reason != scalablenodegroup.ReasonInFlight {
		t.Errorf("Stabilized = %s/%s, want False/%s", status, reason, scalablenodegroup.ReasonInFlight)
	}
	if !sng.StatusConditions().IsHappy() {
		t.Errorf("Ready is not true while an update is in flight: %+v", sng.Status.Conditions)
	}
}
