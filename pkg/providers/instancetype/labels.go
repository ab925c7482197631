package instancetype

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
)

// typeName splits an instance type's name as EC2 composes it: the category letters, an optional
// memory size (u-6tb1), the generation digits and the attribute letters form the family; the
// size follows the dot ("m7gd.2xlarge", "x2iedn.metal", "u-6tb1.112xlarge").
var typeName = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+)[a-z0-9-]*\.(.+)$`)

// typeLabels are the karpenter.k8s.aws labels of an instance type, valued as upstream's provider
// values them, so that NodePools, NodeOverlays and pods written for upstream
// (`instance-category In [c, m, r]`, `instance-generation Gt 2`) select the same types here.
// A label whose source EC2 does not report for the type is left out rather than guessed.
func typeLabels(info ec2types.InstanceTypeInfo) map[string]string {
	labels := map[string]string{}
	name := string(info.InstanceType)
	if m := typeName.FindStringSubmatch(name); m != nil {
		family, _, _ := strings.Cut(name, ".")
		labels[awsv1.LabelInstanceCategory] = m[1]
		labels[awsv1.LabelInstanceGeneration] = m[3]
		labels[awsv1.LabelInstanceFamily] = family
		labels[awsv1.LabelInstanceSize] = m[4]
	}
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		labels[awsv1.LabelInstanceCPU] = strconv.Itoa(int(*info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		labels[awsv1.LabelInstanceMemory] = strconv.FormatInt(*info.MemoryInfo.SizeInMiB, 10)
	}
	// Bare metal runs on no hypervisor: upstream labels it with the empty value, which a
	// requirement `instance-hypervisor In [nitro]` keeps out.
	labels[awsv1.LabelInstanceHypervisor] = string(info.Hypervisor)
	if p := info.ProcessorInfo; p != nil {
		if p.Manufacturer != nil {
			labels[awsv1.LabelInstanceCPUManufacturer] = strings.ToLower(*p.Manufacturer)
		}
		if p.SustainedClockSpeedInGhz != nil {
			labels[awsv1.LabelInstanceCPUSustainedClockSpeedMhz] = strconv.Itoa(int(math.Round(*p.SustainedClockSpeedInGhz * 1000)))
		}
	}
	if info.EbsInfo != nil && info.EbsInfo.EbsOptimizedInfo != nil && info.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		labels[awsv1.LabelInstanceEBSBandwidth] = strconv.Itoa(int(*info.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	if n := info.NetworkInfo; n != nil {
		if n.EncryptionInTransitSupported != nil {
			labels[awsv1.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(*n.EncryptionInTransitSupported)
		}
		if len(n.NetworkCards) > 0 && n.NetworkCards[0].BaselineBandwidthInGbps != nil {
			labels[awsv1.LabelInstanceNetworkBandwidth] = strconv.Itoa(int(math.Round(*n.NetworkCards[0].BaselineBandwidthInGbps * 1000)))
		}
	}
	if s := info.InstanceStorageInfo; s != nil && s.TotalSizeInGB != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
		labels[awsv1.LabelInstanceLocalNVME] = strconv.FormatInt(*s.TotalSizeInGB, 10)
	}
	if info.GpuInfo != nil && len(info.GpuInfo.Gpus) > 0 {
		gpu := info.GpuInfo.Gpus[0]
		setCount(labels, awsv1.LabelInstanceGPUCount, gpu.Count)
		setName(labels, awsv1.LabelInstanceGPUManufacturer, gpu.Manufacturer)
		setName(labels, awsv1.LabelInstanceGPUName, gpu.Name)
		if gpu.MemoryInfo != nil {
			setCount(labels, awsv1.LabelInstanceGPUMemory, gpu.MemoryInfo.SizeInMiB)
		}
	}
	// AWS's own accelerators: Inferentia as the retired Elastic Inference shape reports it, and
	// Inferentia2 and Trainium as neuronInfo does; both are made by AWS.
	if info.InferenceAcceleratorInfo != nil && len(info.InferenceAcceleratorInfo.Accelerators) > 0 {
		accelerator := info.InferenceAcceleratorInfo.Accelerators[0]
		setCount(labels, awsv1.LabelInstanceAcceleratorCount, accelerator.Count)
		setName(labels, awsv1.LabelInstanceAcceleratorManufacturer, accelerator.Manufacturer)
		setName(labels, awsv1.LabelInstanceAcceleratorName, accelerator.Name)
	}
	if info.NeuronInfo != nil && len(info.NeuronInfo.NeuronDevices) > 0 {
		device := info.NeuronInfo.NeuronDevices[0]
		setCount(labels, awsv1.LabelInstanceAcceleratorCount, device.Count)
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = "aws"
		setName(labels, awsv1.LabelInstanceAcceleratorName, device.Name)
	}
	return labels
}

// setCount sets a label to a count EC2 reported, if it did.
func setCount[T int32 | int64](labels map[string]string, key string, count *T) {
	if count != nil {
		labels[key] = strconv.FormatInt(int64(*count), 10)
	}
}

// setName sets a label to a name EC2 reported, if it did, in lower kebab case as label values
// are compared ("NVIDIA" → nvidia, "Radeon Pro V520" → radeon-pro-v520).
func setName(labels map[string]string, key string, name *string) {
	if name != nil {
		labels[key] = strings.ReplaceAll(strings.ToLower(*name), " ", "-")
	}
}
