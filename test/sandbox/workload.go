package sandbox

import (
	appsv1 "k8s.io/api/apps/v1"

	"karpenter.sh/karpenter/pkg/test/builders"
)

// NodeGroupLabel is the label the seed's groups put on their nodes, with the group's name.
const NodeGroupLabel = "karpenter.sh/node-group"

// Workload is a Deployment of pods requesting one CPU and 1Gi each, pinned to the "general"
// group that docs/examples/reserved-capacity.yaml scales on CPU reservations.
func Workload(name string, replicas int32) *appsv1.Deployment {
	return builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: Namespace, Replicas: replicas, Pod: builders.PodOptions{
		NodeSelector: map[string]string{NodeGroupLabel: "general"},
		Requests:     builders.Resources("cpu", "1", "memory", "1Gi"),
	}})
}
