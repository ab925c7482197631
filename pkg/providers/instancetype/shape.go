package instancetype

import (
	"math"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The node shape of an instance type, as an EKS-optimized AMI's kubelet reports it. The
// formulas are documented in docs/aws.md; they are Karpenter's and EKS's own.
const (
	// DefaultVMMemoryOverhead is the share of an instance's memory the hypervisor and firmware
	// keep: a node reports about 7.5% less than the instance type's nominal memory.
	DefaultVMMemoryOverhead = 0.075
	// evictionThresholdMiB is the kubelet's default hard eviction threshold, memory.available<100Mi.
	evictionThresholdMiB = 100
)

// ec2Architectures maps EC2's architecture names to GOARCH names, as nodes report them. Types
// only for Mac hosts or only 32-bit are not launched.
var ec2Architectures = map[ec2types.ArchitectureType]string{
	ec2types.ArchitectureTypeX8664: "amd64",
	ec2types.ArchitectureTypeArm64: "arm64",
}

// architecture is the node's GOARCH, "" for a type Karpenter does not launch.
func architecture(info ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo == nil {
		return ""
	}
	for _, a := range info.ProcessorInfo.SupportedArchitectures {
		if arch, ok := ec2Architectures[a]; ok {
			return arch
		}
	}
	return ""
}

// launchable reports whether Karpenter launches the type: HVM, an architecture nodes run on,
// and not bare metal unless allowed.
func launchable(info ec2types.InstanceTypeInfo, bareMetal bool) bool {
	if !slices.Contains(info.SupportedVirtualizationTypes, ec2types.VirtualizationTypeHvm) {
		return false
	}
	if !bareMetal && info.BareMetal != nil && *info.BareMetal {
		return false
	}
	return architecture(info) != "" && info.VCpuInfo != nil && info.MemoryInfo != nil && info.NetworkInfo != nil
}

// nodeShape holds what the settings change in a node's shape: upstream Karpenter's
// VM_MEMORY_OVERHEAD_PERCENT and RESERVED_ENIS.
type nodeShape struct {
	// vmMemoryOverhead is the share of the nominal memory a node does not report.
	vmMemoryOverhead float64
	// reservedENIs are network interfaces pods get no address from (VPC CNI custom networking).
	reservedENIs int64
}

// maxPods is EKS's rule for the VPC CNI: each ENI but its primary address hands one address
// to a pod, plus the two host-network pods (kube-proxy, aws-node).
func maxPods(maxENIs, ipv4PerENI int64) int64 {
	return maxENIs*(ipv4PerENI-1) + 2
}

// memoryCapacityMiB is the memory a node reports: the nominal memory less the hypervisor's
// share, in tenths of a per mille as the shares are given.
func (s nodeShape) memoryCapacityMiB(nominalMiB int64) int64 {
	return nominalMiB * (100000 - int64(math.Round(s.vmMemoryOverhead*100000))) / 100000
}

// kubeReservedCPUMillis is EKS's kube-reserved CPU: 6% of the first core, 1% of the second,
// 0.5% of the third and fourth, 0.25% of every core above four.
func kubeReservedCPUMillis(vcpus int64) int64 {
	// Tiers in millicores per core, times 100, so that 0.25% of a core (2.5m) stays exact.
	tiers := []struct{ upTo, centiMillisPerCore int64 }{{1, 6000}, {2, 1000}, {4, 500}, {1 << 62, 250}}
	var reserved, counted int64
	for _, tier := range tiers {
		cores := min(vcpus, tier.upTo) - counted
		if cores <= 0 {
			break
		}
		reserved += cores * tier.centiMillisPerCore
		counted += cores
	}
	return reserved / 100
}

// kubeReservedMemoryMiB is EKS's kube-reserved memory: 11 MiB per pod plus 255 MiB.
func kubeReservedMemoryMiB(pods int64) int64 {
	return 11*pods + 255
}

// capacity is what a node of the type reports.
func (s nodeShape) capacity(info ec2types.InstanceTypeInfo) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(*info.VCpuInfo.DefaultVCpus), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(s.memoryCapacityMiB(*info.MemoryInfo.SizeInMiB)*1024*1024, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(s.podsOf(info), resource.DecimalSI),
	}
}

func (s nodeShape) podsOf(info ec2types.InstanceTypeInfo) int64 {
	var enis, ipv4 int64
	if info.NetworkInfo.MaximumNetworkInterfaces != nil {
		enis = int64(*info.NetworkInfo.MaximumNetworkInterfaces)
	}
	if info.NetworkInfo.Ipv4AddressesPerInterface != nil {
		ipv4 = int64(*info.NetworkInfo.Ipv4AddressesPerInterface)
	}
	return maxPods(max(enis-s.reservedENIs, 0), ipv4)
}

// overhead is reserved on every node: kube-reserved CPU and memory and the eviction threshold.
func (s nodeShape) overhead(info ec2types.InstanceTypeInfo) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(kubeReservedCPUMillis(int64(*info.VCpuInfo.DefaultVCpus)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity((kubeReservedMemoryMiB(s.podsOf(info))+evictionThresholdMiB)*1024*1024, resource.BinarySI),
	}
}

// EBS attachment slots when DescribeInstanceTypes does not say (EC2's documented limits): a
// Nitro instance has 28 shared with its network interfaces and NVMe instance store volumes,
// a Xen instance 39 for EBS alone.
const (
	nitroSharedAttachments = 28
	xenEBSAttachments      = 39
)

// ebsVolumeLimit is the fewest EBS volumes the EBS CSI driver can report a node of the type
// attaches: the attachment slots less the root volume and, where slots are shared, every
// network interface the type may attach (the driver subtracts those attached when it starts,
// at most these), its NVMe instance store disks, its GPUs and its Neuron accelerators. The
// driver never reports less than one.
func ebsVolumeLimit(info ec2types.InstanceTypeInfo) int64 {
	var slots int64
	shared := info.Hypervisor != ec2types.InstanceTypeHypervisorXen
	switch {
	case info.EbsInfo != nil && info.EbsInfo.MaximumEbsAttachments != nil:
		slots = int64(*info.EbsInfo.MaximumEbsAttachments)
		shared = info.EbsInfo.AttachmentLimitType != ec2types.AttachmentLimitTypeDedicated
	case shared:
		slots = nitroSharedAttachments
	default:
		slots = xenEBSAttachments
	}
	slots-- // the root volume
	if shared {
		if info.NetworkInfo != nil && info.NetworkInfo.MaximumNetworkInterfaces != nil {
			slots -= int64(*info.NetworkInfo.MaximumNetworkInterfaces)
		}
		if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
			for _, d := range s.Disks {
				slots -= int64(sdkaws.ToInt32(d.Count))
			}
		}
		if info.GpuInfo != nil {
			for _, g := range info.GpuInfo.Gpus {
				slots -= int64(sdkaws.ToInt32(g.Count))
			}
		}
		if info.NeuronInfo != nil {
			for _, d := range info.NeuronInfo.NeuronDevices {
				slots -= int64(sdkaws.ToInt32(d.Count))
			}
		}
	}
	return max(slots, 1)
}
