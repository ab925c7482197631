package hydration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodeclaims"
)

func TestNeedsNodeClaim(t *testing.T) {
	legacy := func(edit func(*corev1.Node)) *corev1.Node {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}},
			Spec:       corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-0123456789abcdef0"},
		}
		if edit != nil {
			edit(node)
		}
		return node
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{name: "a node a Provisioner launched before NodeClaims", node: legacy(nil), want: true},
		{name: "a node its kubelet registered for a NodeClaim, not registered yet (the lifecycle controller's)", node: legacy(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{nodeclaims.UnregisteredTaint}
		})},
		{name: "owned by its NodeClaim", node: legacy(func(n *corev1.Node) {
			n.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: "default-abcde", UID: "u"}}
		})},
		{name: "no Provisioner's", node: legacy(func(n *corev1.Node) { n.Labels = nil })},
		{name: "no instance", node: legacy(func(n *corev1.Node) { n.Spec.ProviderID = "" })},
		{name: "being deleted", node: legacy(func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsNodeClaim(tc.node); got != tc.want {
				t.Errorf("needsNodeClaim = %t, want %t", got, tc.want)
			}
		})
	}
}
