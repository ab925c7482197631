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

// memoryAvailable is the eviction signal whose threshold is held back from pods.
const memoryAvailable = "memory.available"

// WithKubelet is the instance types as nodes whose kubelet runs with these settings report
// them, as upstream's AWS provider computes it: maxPods replaces the network interfaces' pod
// count, podsPerCore caps it by the vCPUs; kubeReserved replaces EKS's figures (which, for
// memory, follow the pod count), systemReserved adds to them, and evictionHard's
// memory.available (a quantity or a share of the memory) replaces the 100Mi threshold. The
// types are copies: the listing's are left as they are.
func WithKubelet(types []*cloudprovider.InstanceType, k KubeletSettings) []*cloudprovider.InstanceType {
	if k.MaxPods == nil && k.PodsPerCore == nil && len(k.KubeReserved) == 0 && len(k.SystemReserved) == 0 && k.EvictionHard[memoryAvailable] == "" {
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
	memory.Add(evictionThreshold(k.EvictionHard[memoryAvailable], *it.Capacity.Memory()))
	it.Overhead[corev1.ResourceCPU] = cpu
	it.Overhead[corev1.ResourceMemory] = memory
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

// evictionThreshold is the memory a hard eviction threshold holds back: a quantity, or a share
// of the node's memory ("5%"); the kubelet's default 100Mi when unset or malformed.
func evictionThreshold(value string, memory resource.Quantity) resource.Quantity {
	fallback := *resource.NewQuantity(evictionThresholdMiB*1024*1024, resource.BinarySI)
	if value == "" {
		return fallback
	}
	if percent, ok := strings.CutSuffix(value, "%"); ok {
		share, err := resource.ParseQuantity(percent)
		if err != nil {
			return fallback
		}
		return *resource.NewQuantity(memory.Value()*share.MilliValue()/100_000, resource.BinarySI)
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return fallback
	}
	return q
}
