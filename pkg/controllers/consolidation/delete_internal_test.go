package consolidation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"karpenter.sh/karpenter/pkg/apis"
	v1alpha5 "karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/events"
)

// provisionerNode is a node of the Provisioner "default", as the client stored it.
func provisionerNode(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name), Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
}

var disrupted = corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}

// TestDeleteTaintsEveryNodeFirst: a decision removing several nodes taints them all before it
// deletes any, so a pod evicted from the first is not scheduled onto the second while it waits
// for its drain (TestConsolidationIntoFewerNodes failed that way once in CI: the pod bounced onto
// a node of the same decision, deleted before it was cordoned). A node changed since the snapshot
// refuses its taint, and the nodes tainted before it are untainted, none deleted; a node whose
// deletion fails is untainted too. Each case fails on the code that deleted the nodes one by one.
func TestDeleteTaintsEveryNodeFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		// conflictOn is the node whose taint is refused as changed since the read; deleteFails
		// the node whose deletion fails.
		conflictOn, deleteFails string
		wantDeleted             []string
		wantTainted             []string
		wantRolledBack          int
		wantErr                 string
	}{
		{name: "all tainted, then all deleted", wantDeleted: []string{"a", "b", "c"}, wantTainted: []string{"a", "b", "c"}},
		{name: "a node changed since the read", conflictOn: "c", wantRolledBack: 2, wantErr: "has been modified"},
		{name: "a deletion fails", deleteFails: "b", wantDeleted: []string{"a", "c"}, wantTainted: []string{"a", "b", "c"}, wantRolledBack: 1, wantErr: "deleting node b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			stored := []client.Object{provisionerNode("a"), provisionerNode("b"), provisionerNode("c")}
			var ops []string
			kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(stored...).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if obj.GetName() == tc.conflictOn {
						return apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, obj.GetName(), fmt.Errorf("the object has been modified"))
					}
					verb := "untaint"
					if nodes.IsDisrupted(obj.(*corev1.Node)) {
						verb = "taint"
					}
					ops = append(ops, verb+" "+obj.GetName())
					return c.Patch(ctx, obj, patch, opts...)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if obj.GetName() == tc.deleteFails {
						return apierrors.NewServiceUnavailable("etcd is away")
					}
					ops = append(ops, "delete "+obj.GetName())
					return c.Delete(ctx, obj, opts...)
				},
			}).Build()
			recorder := record.NewFakeRecorder(10)
			method := &Method{client: kube, recorder: recorder, clock: clocktesting.NewFakeClock(metav1.Now().Time)}
			decision := Decision{Action: Delete, Saving: 0.1}
			for _, name := range []string{"a", "b", "c"} {
				node := &corev1.Node{}
				if err := kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
					t.Fatal(err)
				}
				decision.Nodes = append(decision.Nodes, node)
			}
			err := method.delete(ctx, decision)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("delete: %v, want an error saying %q", err, tc.wantErr)
			}
			firstDelete := slices.IndexFunc(ops, func(op string) bool { return strings.HasPrefix(op, "delete ") })
			if lastTaint := slices.IndexFunc(ops, func(op string) bool { return op == "taint c" }); firstDelete >= 0 && (lastTaint < 0 || lastTaint > firstDelete) {
				t.Errorf("operations %v: a node was deleted before every node was tainted", ops)
			}
			var deleted, tainted []string
			for _, name := range []string{"a", "b", "c"} {
				node := &corev1.Node{}
				err := kube.Get(ctx, client.ObjectKey{Name: name}, node)
				switch {
				case apierrors.IsNotFound(err):
					deleted = append(deleted, name)
					if !slices.Contains(ops, "taint "+name) {
						t.Errorf("node %s was deleted without its taint", name)
					}
				case err != nil:
					t.Fatal(err)
				case nodes.IsDisrupted(node):
					t.Errorf("node %s is left tainted disrupted, not deleted", name)
				}
			}
			for _, op := range ops {
				if name, ok := strings.CutPrefix(op, "taint "); ok {
					tainted = append(tainted, name)
				}
			}
			if !slices.Equal(deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v (operations %v)", deleted, tc.wantDeleted, ops)
			}
			if tc.wantTainted != nil && !slices.Equal(tainted, tc.wantTainted) {
				t.Errorf("tainted %v, want %v", tainted, tc.wantTainted)
			}
			if rolledBack := events.Count(recorder, ReasonRolledBack); rolledBack != tc.wantRolledBack {
				t.Errorf("%d %s Events, want %d (operations %v)", rolledBack, ReasonRolledBack, tc.wantRolledBack, ops)
			}
		})
	}
}

// TestRollBackInterrupted: a Provisioner's node left tainted disrupted by a pass that stopped
// between the taints and the deletions is untainted at the next pass; a node being deleted, or
// not a Provisioner's, keeps its taint.
func TestRollBackInterrupted(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	left := provisionerNode("left", disrupted)
	deleting := provisionerNode("deleting", disrupted)
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"karpenter.sh/termination"}
	nodePools := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nodepools", Labels: map[string]string{"karpenter.sh/nodepool": "default"}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{disrupted}}}
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(left, deleting, nodePools, provisionerNode("untainted")).Build()
	recorder := record.NewFakeRecorder(10)
	method := &Method{client: kube, recorder: recorder, clock: clocktesting.NewFakeClock(now.Time)}
	if err := method.rollBackInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	for name, wantTainted := range map[string]bool{"left": false, "deleting": true, "nodepools": true, "untainted": false} {
		node := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			t.Fatal(err)
		}
		if nodes.IsDisrupted(node) != wantTainted {
			t.Errorf("node %s tainted %v, want %v", name, nodes.IsDisrupted(node), wantTainted)
		}
	}
	if rolledBack := events.Count(recorder, ReasonRolledBack); rolledBack != 1 {
		t.Errorf("%d %s Events, want 1", rolledBack, ReasonRolledBack)
	}
}
