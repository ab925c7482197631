package sandbox

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
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

// ProvisionerName is the Provisioner of docs/examples/provisioner.yaml.
const ProvisionerName = "default"

// ShopLabel marks the pods of the Shop Deployments.
const ShopLabel = "sandbox.karpenter.sh/shop"

// Shop is 30 pods of mixed sizes for the Provisioner of docs/examples/provisioner.yaml to
// launch nodes for: "web" (16 × 500m/1Gi) and "api" (10 × 2 CPU/4Gi) each spread evenly over
// the zones, and "cache" (4 × 1 CPU/2Gi) one per node. Their nodeSelector names the
// Provisioner, so the node groups' nodes never take them.
func Shop() []*appsv1.Deployment {
	shop := func(name string, replicas int32, cpu, memory string, spreadOverZones bool) *appsv1.Deployment {
		labels := map[string]string{"app": "shop-" + name, ShopLabel: "true"}
		pod := builders.PodOptions{
			Labels:       labels,
			NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: ProvisionerName},
			Requests:     builders.Resources("cpu", cpu, "memory", memory),
		}
		if spreadOverZones {
			pod.TopologySpread = []corev1.TopologySpreadConstraint{
				builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": labels["app"]}),
			}
		} else {
			pod.PodAntiAffinity = []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": labels["app"]})}
		}
		return builders.Deployment(builders.DeploymentOptions{Name: "shop-" + name, Namespace: Namespace, Replicas: replicas, Pod: pod})
	}
	return []*appsv1.Deployment{
		shop("web", 16, "500m", "1Gi", true),
		shop("api", 10, "2", "4Gi", true),
		shop("cache", 4, "1", "2Gi", false),
	}
}
