package readiness_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestOpenFailsOnlyWhenTheTaintMoved: removing the not-ready taint of a node read earlier
// applies over the kubelet's status updates and taints added after it since, and fails when the
// taints before it changed, so that the node is read again and every other taint kept.
func TestOpenFailsOnlyWhenTheTaintMoved(t *testing.T) {
	notReady := corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}
	team := corev1.Taint{Key: "team", Effect: corev1.TaintEffectNoSchedule}
	drain := corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute}
	read := builders.Node(builders.NodeOptions{Name: "launched", Ready: corev1.ConditionTrue,
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"},
		Taints: []corev1.Taint{team, notReady}})
	for _, tc := range []struct {
		name   string
		change func(*corev1.Node)
		fails  bool
		want   []corev1.Taint
	}{
		{name: "unchanged", change: func(*corev1.Node) {}, want: []corev1.Taint{team}},
		{name: "a status update", change: func(n *corev1.Node) { n.Status.Conditions[0].Message = "kubelet is posting ready status" },
			want: []corev1.Taint{team}},
		{name: "a label added", change: func(n *corev1.Node) { n.Labels["team"] = "a" }, want: []corev1.Taint{team}},
		{name: "a taint added after it", change: func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, drain) },
			want: []corev1.Taint{team, drain}},
		{name: "a taint inserted before it", change: func(n *corev1.Node) { n.Spec.Taints = append([]corev1.Taint{drain}, n.Spec.Taints...) },
			fails: true, want: []corev1.Taint{drain, team, notReady}},
		{name: "a taint removed", change: func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{notReady} },
			fails: true, want: []corev1.Taint{notReady}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := read.DeepCopy()
			tc.change(stored)
			kube := clientfake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(stored).Build()
			c, err := readiness.New(readiness.Options{Client: readAsBefore{Client: kube, node: read}, Recorder: record.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(time.Now())})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(read)})
			if (err != nil) != tc.fails {
				t.Fatalf("reconcile: %v, want failed %t", err, tc.fails)
			}
			got := &corev1.Node{}
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(read), got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Spec.Taints, tc.want) {
				t.Errorf("taints %v, want %v", got.Spec.Taints, tc.want)
			}
		})
	}
}

// readAsBefore reads the node as it was before the change: the reconciler's cache lagging.
type readAsBefore struct {
	client.Client
	node *corev1.Node
}

func (r readAsBefore) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if node, ok := obj.(*corev1.Node); ok && key.Name == r.node.Name {
		r.node.DeepCopyInto(node)
		return nil
	}
	return r.Client.Get(ctx, key, obj, opts...)
}
