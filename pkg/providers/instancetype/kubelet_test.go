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

// A node class's kubelet settings size its types' ephemeral storage overhead as they do
// memory's: kubeReserved replaces EKS's 1Gi, systemReserved adds to it, and evictionHard's
// nodefs.available, a quantity or a share of the storage, replaces the 10% threshold.
func TestWithKubeletEphemeralStorage(t *testing.T) {
	withStorage := func() *cloudprovider.InstanceType {
		it := m5xlarge()
		it.Capacity[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
		it.Overhead[corev1.ResourceEphemeralStorage] = resource.MustParse("11Gi") // 1Gi + 10%
		return it
	}
	for _, tc := range []struct {
		name     string
		settings instancetype.KubeletSettings
		want     string
	}{
		{"settings of other resources: EKS's 1Gi and 10%", instancetype.KubeletSettings{MaxPods: ptr.To[int32](110)}, "11Gi"},
		{"kubeReserved replaces, systemReserved adds",
			instancetype.KubeletSettings{KubeReserved: map[string]string{"ephemeral-storage": "3Gi"}, SystemReserved: map[string]string{"ephemeral-storage": "2Gi"}}, "15Gi"},
		{"a share of the storage held for eviction", instancetype.KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "5%"}}, "6Gi"},
		{"a quantity held for eviction", instancetype.KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "20Gi"}}, "21Gi"},
		{"a malformed threshold is the kubelet's default", instancetype.KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "lots"}}, "11Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := withStorage()
			got := instancetype.WithKubelet([]*cloudprovider.InstanceType{listed}, tc.settings)[0]
			if overhead := got.Overhead[corev1.ResourceEphemeralStorage]; overhead.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("ephemeral storage overhead = %s, want %s", overhead.String(), tc.want)
			}
			if storage := got.Capacity[corev1.ResourceEphemeralStorage]; storage.Cmp(resource.MustParse("100Gi")) != 0 {
				t.Errorf("ephemeral storage = %s, want the listed 100Gi", storage.String())
			}
			if reserved := listed.Overhead[corev1.ResourceEphemeralStorage]; reserved.Cmp(resource.MustParse("11Gi")) != 0 {
				t.Errorf("the listed type changed: %s", reserved.String())
			}
		})
	}
	// A share of a RAID0 node's instance store — d3en.12xlarge's 335,520 GB — is held back whole:
	// the product of the bytes and the share overflowed an int64 to a negative overhead.
	huge := m5xlarge()
	huge.Capacity[corev1.ResourceEphemeralStorage] = resource.MustParse("335520G")
	huge.Overhead[corev1.ResourceEphemeralStorage] = resource.MustParse("33553Gi")
	got := instancetype.WithKubelet([]*cloudprovider.InstanceType{huge}, instancetype.KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "30%"}})[0]
	if overhead, want := got.Overhead[corev1.ResourceEphemeralStorage], resource.MustParse("100657073741824"); overhead.Cmp(want) != 0 { // 1Gi + 100,656 GB
		t.Errorf("ephemeral storage overhead of 335520G at 30%% = %s, want %s", overhead.String(), want.String())
	}
	// Without ephemeral storage (a Provisioner's types), none is reserved.
	got = instancetype.WithKubelet([]*cloudprovider.InstanceType{m5xlarge()}, instancetype.KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "5%"}})[0]
	if reserved, ok := got.Overhead[corev1.ResourceEphemeralStorage]; ok {
		t.Errorf("a type without ephemeral storage reserves %s of it", reserved.String())
	}
}
