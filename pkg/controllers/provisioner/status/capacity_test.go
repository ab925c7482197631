package status_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/controllers/provisioner/status"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestCapacity(t *testing.T) {
	node := func(pairs ...string) corev1.Node {
		return *builders.Node(builders.NodeOptions{Capacity: builders.Resources(pairs...)})
	}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  corev1.ResourceList
	}{
		{name: "no nodes"},
		{name: "a node that reported no capacity yet", nodes: []corev1.Node{*builders.Node(builders.NodeOptions{})}},
		{name: "one node", nodes: []corev1.Node{node("cpu", "2", "memory", "8Gi", "pods", "29")},
			want: builders.Resources("cpu", "2", "memory", "8Gi", "pods", "29")},
		{name: "sums per resource, units mixed", nodes: []corev1.Node{
			node("cpu", "2", "memory", "8Gi", "pods", "29"),
			node("cpu", "500m", "memory", "1024Mi", "pods", "110", "nvidia.com/gpu", "1"),
		}, want: builders.Resources("cpu", "2500m", "memory", "9Gi", "pods", "139", "nvidia.com/gpu", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Capacity(tc.nodes); !builders.EqualResources(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("Capacity = %v, want %v", got, tc.want)
			}
		})
	}
}
