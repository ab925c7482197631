package instancetype_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/instancetype"
)

// m5xlarge is an m5.xlarge as the catalogue lists it: 4 vCPUs, 58 pods, EKS's reservations.
func m5xlarge() *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name: "m5.xlarge",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("15155Mi"),
			corev1.ResourcePods: resource.MustParse("58")},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("993Mi")},
	}
}

func TestWithKubelet(t *testing.T) {
	for _, tc := range []struct {
		name              string
		settings          instancetype.KubeletSettings
		pods, cpu, memory string
	}{
		{"no settings: as listed", instancetype.KubeletSettings{}, "58", "80m", "993Mi"},
		// 11 MiB a pod + 255 MiB + 100 MiB eviction, for 110 pods.
		{"maxPods: the pods, and the memory EKS reserves for them", instancetype.KubeletSettings{MaxPods: ptr.To[int32](110)}, "110", "80m", "1565Mi"},
		{"podsPerCore caps the pods", instancetype.KubeletSettings{MaxPods: ptr.To[int32](110), PodsPerCore: ptr.To[int32](10)}, "40", "80m", "795Mi"},
		{"kubeReserved replaces, systemReserved adds",
			instancetype.KubeletSettings{KubeReserved: map[string]string{"cpu": "200m", "memory": "1Gi"}, SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi"}},
			"58", "300m", "1224Mi"},
		{"a share of the memory held for eviction",
			instancetype.KubeletSettings{KubeReserved: map[string]string{"memory": "1Gi"}, EvictionHard: map[string]string{"memory.available": "10%"}},
			"58", "80m", "2539.5Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := m5xlarge()
			got := instancetype.WithKubelet([]*cloudprovider.InstanceType{listed}, tc.settings)[0]
			for name, want := range map[string]resource.Quantity{"pods": got.Capacity[corev1.ResourcePods], "cpu": got.Overhead[corev1.ResourceCPU], "memory": got.Overhead[corev1.ResourceMemory]} {
				expected := map[string]string{"pods": tc.pods, "cpu": tc.cpu, "memory": tc.memory}[name]
				if want.Cmp(resource.MustParse(expected)) != 0 {
					t.Errorf("%s = %s, want %s", name, want.String(), expected)
				}
			}
			if listed.Capacity.Pods().Value() != 58 || listed.Overhead.Memory().Cmp(resource.MustParse("993Mi")) != 0 {
				t.Errorf("the listed type changed: %v %v", listed.Capacity, listed.Overhead)
			}
		})
	}
}
