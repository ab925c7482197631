package v1alpha5_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// TestLabelsTheKubeletRefusesAreRefusedAtAdmission is finding 8 of issue 34: a Provisioner's
// labels go into the kubelet's --node-labels, and the kubelet refuses to start with a label in
// the kubernetes.io or k8s.io namespaces outside the set it may set on its own Node
// (node-role.kubernetes.io/worker, the usual one): the node never joins. The CRD refuses them,
// naming the label and the rule.
func TestLabelsTheKubeletRefusesAreRefusedAtAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := context.Background()
	for _, tc := range []struct {
		label    string
		admitted bool
	}{
		{"node-role.kubernetes.io/worker", false},
		{"kubernetes.io/role", false},
		{"node-restriction.kubernetes.io/team", false},
		{"k8s.io/team", false},
		{"example.k8s.io/team", false},
		{"team", true},
		{"example.com/team", true},
		{"kubernetes.io.example.com/team", true},
		{"node.kubernetes.io/pool", true},
		{"pool.node.kubernetes.io/gpu", true},
		{"kubelet.kubernetes.io/pool", true},
		{"topology.kubernetes.io/region", true},
		{"beta.kubernetes.io/os", true},
	} {
		t.Run(tc.label, func(t *testing.T) {
			object := manifests.Decode(t, fmt.Sprintf("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: labels}\nspec: {labels: {%s: x}}", tc.label))
			err := env.Client.Create(ctx, object, client.DryRunAll)
			want := fmt.Sprintf("the kubelet refuses to register a node with label %s", tc.label)
			switch {
			case tc.admitted && err != nil:
				t.Errorf("rejected with\n  %v\nwant admitted", err)
			case !tc.admitted && err == nil:
				t.Errorf("admitted, want a message containing\n  %s", want)
			case !tc.admitted && !strings.Contains(err.Error(), want):
				t.Errorf("rejected with\n  %v\nwant a message containing\n  %s", err, want)
			}
		})
	}
}
