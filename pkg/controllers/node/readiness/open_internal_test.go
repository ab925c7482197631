package readiness

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
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
)

// TestOpenPatchOnTheAPIServer: kube-apiserver applies the patch opening a node over a status
// update made since the node was read, and refuses it, in a way changedSinceRead tells, when
// the taints changed since.
func TestOpenPatchOnTheAPIServer(t *testing.T) {
	env := environment.New(t, environment.Options{})
	ctx := context.Background()
	notReady := corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}
	team := corev1.Taint{Key: "team", Effect: corev1.TaintEffectNoSchedule}
	node := builders.Node(builders.NodeOptions{Name: "launched", Taints: []corev1.Taint{notReady}})
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	read := node.DeepCopy()

	// A taint added since the node was read: refused, and told apart.
	node.Spec.Taints = append(node.Spec.Taints, team)
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	patch, err := openPatch(read)
	if err != nil {
		t.Fatal(err)
	}
	err = env.Client.Patch(ctx, read.DeepCopy(), client.RawPatch(types.JSONPatchType, patch))
	if !changedSinceRead(err) {
		t.Fatalf("patch over a changed taint: %v, want it refused as changed since read", err)
	}

	// Read again, then only the status changes: applied.
	read = node.DeepCopy()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if patch, err = openPatch(read); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, read.DeepCopy(), client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("patch over a status update: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's TaintNodesByCondition added its own not-ready taint at the creation.
	if want := slices.DeleteFunc(slices.Clone(read.Spec.Taints), isNotReadyTaint); !slices.Equal(node.Spec.Taints, want) || !slices.Contains(want, team) {
		t.Errorf("taints %v, want %v", node.Spec.Taints, want)
	}

	for _, other := range []error{
		errors.New("connection refused"),
		apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "launched", errors.New("changed")),
		apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "launched", field.ErrorList{field.Invalid(field.NewPath("spec", "taints"), "", "bad")}),
	} {
		if changedSinceRead(other) {
			t.Errorf("%v taken for a failed test", other)
		}
	}
}
