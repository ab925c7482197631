package consolidation_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestPendingCountsOnlyPodsAProvisionerCouldServe is finding 34.6: a pod no Provisioner could
// ever give a node would hold expiry and consolidation back for the whole cluster.
func TestPendingCountsOnlyPodsAProvisionerCouldServe(t *testing.T) {
	pending := func(options builders.PodOptions) *corev1.Pod {
		options.Unschedulable = true
		return builders.Pod(options)
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want int
	}{
		{"a pod a new node would serve", pending(builders.PodOptions{Requests: builders.Resources("cpu", "1")}), 1},
		{"a pod an existing node has room for", pending(builders.PodOptions{NodeSelector: map[string]string{corev1.LabelHostname: "existing"}}), 1},
		{"a pod selecting a zone no Provisioner offers", pending(builders.PodOptions{NodeSelector: map[string]string{corev1.LabelTopologyZone: "us-west-2z"}}), 0},
		{"a pod larger than every instance type", pending(builders.PodOptions{Requests: builders.Resources("cpu", "1000")}), 0},
		{"a pod past its Provisioner's limits", pending(builders.PodOptions{NodeSelector: map[string]string{"pool": "limited"}}), 0},
		{"a pod bound to a node waits for nothing", builders.Pod(builders.PodOptions{NodeName: "existing"}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			existing := builders.Node(builders.NodeOptions{Name: "existing", Ready: corev1.ConditionTrue,
				Labels: map[string]string{corev1.LabelHostname: "existing"}, Allocatable: builders.Resources("cpu", "4", "memory", "16Gi", "pods", "110")})
			client := crfake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(
				builders.Provisioner(builders.ProvisionerOptions{Name: "default"}),
				builders.Provisioner(builders.ProvisionerOptions{Name: "limited", Labels: map[string]string{"pool": "limited"}, Limits: builders.Resources("cpu", "0")}),
				existing, tc.pod,
			).Build()
			cluster, err := state.Read(t.Context(), client, now)
			if err != nil {
				t.Fatal(err)
			}
			snapshot, _, err := consolidation.Read(t.Context(), client, cluster, fake.NewInstanceProvider(fake.InstanceProviderOptions{}), provisioning.NewLedger())
			if err != nil {
				t.Fatal(err)
			}
			if snapshot.Pending != tc.want {
				t.Errorf("pending %d, want %d", snapshot.Pending, tc.want)
			}
		})
	}
}
