package nodes_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// indexer records the one index registered, as the manager's cache would take it.
type indexer struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

func (i *indexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	i.obj, i.field, i.extract = obj, field, extract
	return nil
}

func TestIndexProvisioner(t *testing.T) {
	registered := &indexer{}
	if err := nodes.IndexProvisioner(t.Context(), registered); err != nil {
		t.Fatal(err)
	}
	if _, ok := registered.obj.(*corev1.Node); !ok || registered.field != nodes.ProvisionerField {
		t.Fatalf("registered %T %q, want nodes by %q", registered.obj, registered.field, nodes.ProvisionerField)
	}
	node := func(name, provisioner string) *corev1.Node {
		labels := map[string]string{"karpenter.sh/node-group": "other"}
		if provisioner != "" {
			labels[v1alpha5.ProvisionerNameLabelKey] = provisioner
		}
		return builders.Node(builders.NodeOptions{Name: name, Labels: labels})
	}
	reader := fake.NewClientBuilder().
		WithObjects(node("a-1", "a"), node("a-2", "a"), node("b-1", "b"), node("unmanaged", ""), node("empty-name", "")).
		WithIndex(&corev1.Node{}, registered.field, registered.extract).
		Build()
	for _, tc := range []struct {
		provisioner string
		want        []string
	}{
		{provisioner: "a", want: []string{"a-1", "a-2"}},
		{provisioner: "b", want: []string{"b-1"}},
		{provisioner: "absent"},
		// Nodes without the label are not indexed, not indexed under "".
		{provisioner: ""},
	} {
		t.Run(tc.provisioner, func(t *testing.T) {
			list := &corev1.NodeList{}
			if err := reader.List(t.Context(), list, client.MatchingFields{nodes.ProvisionerField: tc.provisioner}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range list.Items {
				got = append(got, n.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("nodes of %q = %v, want %v", tc.provisioner, got, tc.want)
			}
		})
	}
}
