package instancetype

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// KubeletSettings are what of a node class's kubelet configuration changes what its nodes
// report: how many pods they take and what they reserve for the system and for eviction.
type KubeletSettings struct {
	MaxPods, PodsPerCore                       *int32
	KubeReserved, SystemReserved, EvictionHard map[string]string
}

// The hard eviction signals whose thresholds are held back from pods.
const (
	memoryAvailable = "memory.available"
	nodefsAvailable = "nodefs.available"
)

// defaultKubeReservedEphemeralStorage is the ephemeral storage the EKS-optimized AMIs reserve
// for the kubelet and container runtime.
var defaultKubeReservedEphemeralStorage = resource.MustParse("1Gi")

// WithKubelet is the instance types as nodes whose kubelet runs with these settings report
// them, as upstream's AWS provider computes it: maxPods replaces the network interfaces' pod
// count, podsPerCore caps it by the vCPUs; kubeReserved replaces EKS's figures (which, for
// memory, follow the pod count), systemReserved adds to them, and evictionHard's
// memory.available and nodefs.available (a quantity or a share of the memory or ephemeral
// storage) replace the kubelet's 100Mi and 10% thresholds. The types are copies: the
// listing's are left as they are.
func WithKubelet(types []*cloudprovider.InstanceType, k KubeletSettings) []*cloudprovider.InstanceType {
	if k.MaxPods == nil && k.PodsPerCore == nil && len(k.KubeReserved) == 0 && len(k.SystemReserved) == 0 &&
		k.EvictionHard[memoryAvailable] == "" && k.EvictionHard[nodefsAvailable] == "" {
		return types
	}
	out := make([]*cloudprovider.InstanceType, len(types))
	for i, it := range types {
		shaped := *it
		shaped.Capacity = it.Capacity.DeepCopy()
		shaped.Overhead = it.Overhead.DeepCopy()
		k.shape(&shaped)
		out[i] = &shaped
	}
	return out
}

func (k KubeletSettings) shape(it *cloudprovider.InstanceType) {
	vcpus := it.Capacity.Cpu().Value()
	pods := it.Capacity.Pods().Value()
	if k.MaxPods != nil {
		pods = int64(*k.MaxPods)
	}
	if k.PodsPerCore != nil && *k.PodsPerCore > 0 {
		pods = min(pods, int64(*k.PodsPerCore)*vcpus)
	}
	it.Capacity[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)

	cpu := reserved(k.KubeReserved, corev1.ResourceCPU, *resource.NewMilliQuantity(kubeReservedCPUMillis(vcpus), resource.DecimalSI))
	cpu.Add(reserved(k.SystemReserved, corev1.ResourceCPU, resource.Quantity{}))
	memory := reserved(k.KubeReserved, corev1.ResourceMemory, *resource.NewQuantity(kubeReservedMemoryMiB(pods)*1024*1024, resource.BinarySI))
	memory.Add(reserved(k.SystemReserved, corev1.ResourceMemory, resource.Quantity{}))
	memory.Add(evictionThreshold(k.EvictionHard[memoryAvailable], *it.Capacity.Memory(), *resource.NewQuantity(evictionThresholdMiB*1024*1024, resource.BinarySI)))
	it.Overhead[corev1.ResourceCPU] = cpu
	it.Overhead[corev1.ResourceMemory] = memory
	// Only a node class's types report ephemeral storage (List's storage).
	if storage, ok := it.Capacity[corev1.ResourceEphemeralStorage]; ok {
		it.Overhead[corev1.ResourceEphemeralStorage] = k.ephemeralStorageOverhead(storage)
	}
}

// ephemeralStorageOverhead is what the kubelet holds back of a node's ephemeral storage:
// kube-reserved (EKS's 1Gi unless kubeReserved sets it), systemReserved's, and the hard
// eviction threshold nodefs.available (10% unless evictionHard sets it).
func (k KubeletSettings) ephemeralStorageOverhead(storage resource.Quantity) resource.Quantity {
	overhead := reserved(k.KubeReserved, corev1.ResourceEphemeralStorage, defaultKubeReservedEphemeralStorage)
	overhead.Add(reserved(k.SystemReserved, corev1.ResourceEphemeralStorage, resource.Quantity{}))
	// The kubelet's default threshold is nodefs.available<10%.
	overhead.Add(evictionThreshold(k.EvictionHard[nodefsAvailable], storage, *resource.NewQuantity(storage.Value()/10, resource.BinarySI)))
	return overhead
}

// reserved is the quantity the map sets for the resource, fallback when it sets none or one the
// schema should have refused.
func reserved(settings map[string]string, name corev1.ResourceName, fallback resource.Quantity) resource.Quantity {
	value, ok := settings[string(name)]
	if !ok {
		return fallback
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return fallback
	}
	return q
}

// shareOf is milliPercent thousandths of a percent of total, rounded down, without the product
// overflowing: a RAID0 node's ephemeral storage (hundreds of TB of instance store) times a
// threshold's share exceeds an int64.
func shareOf(total, milliPercent int64) int64 {
	return total/100_000*milliPercent + total%100_000*milliPercent/100_000
}

// evictionThreshold is what a hard eviction threshold holds back of a resource: a quantity, or
// a share of its capacity ("5%"); the kubelet's default when unset or malformed (the schema
// should have refused that).
func evictionThreshold(value string, capacity, kubeletDefault resource.Quantity) resource.Quantity {
	if value == "" {
		return kubeletDefault
	}
	if percent, ok := strings.CutSuffix(value, "%"); ok {
		share, err := resource.ParseQuantity(percent)
		if err != nil {
			return kubeletDefault
		}
		return *resource.NewQuantity(shareOf(capacity.Value(), share.MilliValue()), resource.BinarySI)
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return kubeletDefault
	}
	return q
}
