package nodes_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
)

var (
	notReady  = corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}
	launching = corev1.Taint{Key: v1alpha5.LaunchingTaintKey, Effect: corev1.TaintEffectNoSchedule}
	dedicated = corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
)

func TestRemoveTaintPatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		taints []corev1.Taint
		want   string
	}{
		{name: "absent", taints: []corev1.Taint{dedicated, notReady}, want: ""},
		{name: "after others", taints: []corev1.Taint{dedicated, notReady, launching},
			want: `[{"op":"test","path":"/spec/taints/2","value":{"key":"karpenter.sh/launching","effect":"NoSchedule"}},{"op":"remove","path":"/spec/taints/2"}]`},
		{name: "alone", taints: []corev1.Taint{launching},
			want: `[{"op":"test","path":"/spec/taints/0","value":{"key":"karpenter.sh/launching","effect":"NoSchedule"}},{"op":"remove","path":"/spec/taints/0"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := nodes.RemoveTaintPatch(builders.Node(builders.NodeOptions{Taints: tc.taints}), v1alpha5.LaunchingTaintKey)
			if err != nil || string(patch) != tc.want {
				t.Errorf("patch %s, %v; want %s", patch, err, tc.want)
			}
		})
	}
}

// TestRemoveTaintPatchOnTheAPIServer: kube-apiserver applies the patch over status updates
// and taints added after it since the node was read, and refuses it, in a way ChangedSinceRead
// tells, when the taint moved.
func TestRemoveTaintPatchOnTheAPIServer(t *testing.T) {
	env := environment.New(t, environment.Options{})
	ctx := context.Background()
	node := builders.Node(builders.NodeOptions{Name: "launched", Taints: []corev1.Taint{notReady}})
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	read := node.DeepCopy()

	// A taint inserted before it since the node was read: refused, and told apart.
	node.Spec.Taints = append([]corev1.Taint{dedicated}, node.Spec.Taints...)
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	patch, err := nodes.RemoveTaintPatch(read, v1alpha5.NotReadyTaintKey)
	if err != nil {
		t.Fatal(err)
	}
	err = env.Client.Patch(ctx, read.DeepCopy(), client.RawPatch(types.JSONPatchType, patch))
	if !nodes.ChangedSinceRead(err) {
		t.Fatalf("patch over a moved taint: %v, want it refused as changed since read", err)
	}

	// Read again, then the status changes and a taint is added after it: applied, keeping it.
	read = node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, launching)
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if patch, err = nodes.RemoveTaintPatch(read, v1alpha5.NotReadyTaintKey); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, read.DeepCopy(), client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("patch over a status update and a later taint: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(node.Spec.Taints, notReady) || !slices.Contains(node.Spec.Taints, dedicated) || !slices.Contains(node.Spec.Taints, launching) {
		t.Errorf("taints %v, want %s removed and the others kept", node.Spec.Taints, notReady.Key)
	}

	for _, other := range []error{
		errors.New("connection refused"),
		apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "launched", errors.New("changed")),
		apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "launched", field.ErrorList{field.Invalid(field.NewPath("spec", "taints"), "", "bad")}),
	} {
		if nodes.ChangedSinceRead(other) {
			t.Errorf("%v taken for a failed test", other)
		}
	}
}
