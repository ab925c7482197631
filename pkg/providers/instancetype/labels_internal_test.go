package instancetype

import (
	"maps"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The wanted values are upstream's, from its instance type reference
// (aws/karpenter-provider-aws website/content/en/v1.14/reference/instance-types.md), whose
// labels its provider computes from the same DescribeInstanceTypes fields.
func TestTypeLabelsAreUpstreams(t *testing.T) {
	shape := func(name string, cpus int32, mib int64, hypervisor ec2types.InstanceTypeHypervisor) ec2types.InstanceTypeInfo {
		return ec2types.InstanceTypeInfo{InstanceType: ec2types.InstanceType(name), Hypervisor: hypervisor,
			VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: sdkaws.Int32(cpus)}, MemoryInfo: &ec2types.MemoryInfo{SizeInMiB: sdkaws.Int64(mib)}}
	}
	nitro := ec2types.InstanceTypeHypervisorNitro
	m5Large := shape("m5.large", 2, 8192, nitro)
	m5Large.ProcessorInfo = &ec2types.ProcessorInfo{Manufacturer: sdkaws.String("Intel"), SustainedClockSpeedInGhz: sdkaws.Float64(3.1)}
	m5Large.EbsInfo = &ec2types.EbsInfo{EbsOptimizedInfo: &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: sdkaws.Int32(4750)}}
	m5Large.NetworkInfo = &ec2types.NetworkInfo{EncryptionInTransitSupported: sdkaws.Bool(false),
		NetworkCards: []ec2types.NetworkCardInfo{{BaselineBandwidthInGbps: sdkaws.Float64(0.75)}}}
	r6id := shape("r6id.large", 2, 16384, nitro)
	r6id.InstanceStorageInfo = &ec2types.InstanceStorageInfo{TotalSizeInGB: sdkaws.Int64(118), NvmeSupport: ec2types.EphemeralNvmeSupportRequired}
	g5 := shape("g5.xlarge", 4, 16384, nitro)
	g5.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Count: sdkaws.Int32(1), Manufacturer: sdkaws.String("NVIDIA"), Name: sdkaws.String("A10G"),
		MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: sdkaws.Int32(22888)}}}}
	inf2 := shape("inf2.xlarge", 4, 16384, nitro)
	inf2.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{Count: sdkaws.Int32(1), Name: sdkaws.String("Inferentia2")}}}
	inf1 := shape("inf1.xlarge", 4, 8192, nitro)
	inf1.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{Count: sdkaws.Int32(1), Manufacturer: sdkaws.String("AWS"), Name: sdkaws.String("Inferentia")}}}

	tests := []struct {
		info ec2types.InstanceTypeInfo
		want map[string]string
	}{
		{m5Large, map[string]string{"instance-category": "m", "instance-family": "m5", "instance-generation": "5", "instance-size": "large", "instance-cpu": "2", "instance-memory": "8192", "instance-hypervisor": "nitro",
			"instance-cpu-manufacturer": "intel", "instance-cpu-sustained-clock-speed-mhz": "3100", "instance-ebs-bandwidth": "4750", "instance-encryption-in-transit-supported": "false", "instance-network-bandwidth": "750"}},
		{shape("x2iedn.2xlarge", 8, 262144, nitro), map[string]string{"instance-category": "x", "instance-family": "x2iedn", "instance-generation": "2", "instance-size": "2xlarge", "instance-cpu": "8", "instance-memory": "262144", "instance-hypervisor": "nitro"}},
		{shape("m5.metal", 96, 393216, ""), map[string]string{"instance-category": "m", "instance-family": "m5", "instance-generation": "5", "instance-size": "metal", "instance-cpu": "96", "instance-memory": "393216", "instance-hypervisor": ""}},
		{shape("u7i-12tb.224xlarge", 896, 12582912, nitro), map[string]string{"instance-category": "u", "instance-family": "u7i-12tb", "instance-generation": "7", "instance-size": "224xlarge", "instance-cpu": "896", "instance-memory": "12582912", "instance-hypervisor": "nitro"}},
		{shape("hpc7g.4xlarge", 16, 131072, nitro), map[string]string{"instance-category": "hpc", "instance-family": "hpc7g", "instance-generation": "7", "instance-size": "4xlarge", "instance-cpu": "16", "instance-memory": "131072", "instance-hypervisor": "nitro"}},
		{shape("c4.large", 2, 3840, ec2types.InstanceTypeHypervisorXen), map[string]string{"instance-category": "c", "instance-family": "c4", "instance-generation": "4", "instance-size": "large", "instance-cpu": "2", "instance-memory": "3840", "instance-hypervisor": "xen"}},
		{r6id, map[string]string{"instance-category": "r", "instance-family": "r6id", "instance-generation": "6", "instance-size": "large", "instance-cpu": "2", "instance-memory": "16384", "instance-hypervisor": "nitro", "instance-local-nvme": "118"}},
		{g5, map[string]string{"instance-category": "g", "instance-family": "g5", "instance-generation": "5", "instance-size": "xlarge", "instance-cpu": "4", "instance-memory": "16384", "instance-hypervisor": "nitro",
			"instance-gpu-count": "1", "instance-gpu-manufacturer": "nvidia", "instance-gpu-name": "a10g", "instance-gpu-memory": "22888"}},
		{inf2, map[string]string{"instance-category": "inf", "instance-family": "inf2", "instance-generation": "2", "instance-size": "xlarge", "instance-cpu": "4", "instance-memory": "16384", "instance-hypervisor": "nitro",
			"instance-accelerator-count": "1", "instance-accelerator-manufacturer": "aws", "instance-accelerator-name": "inferentia2"}},
		{inf1, map[string]string{"instance-category": "inf", "instance-family": "inf1", "instance-generation": "1", "instance-size": "xlarge", "instance-cpu": "4", "instance-memory": "8192", "instance-hypervisor": "nitro",
			"instance-accelerator-count": "1", "instance-accelerator-manufacturer": "aws", "instance-accelerator-name": "inferentia"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.info.InstanceType), func(t *testing.T) {
			want := map[string]string{}
			for k, v := range tt.want {
				want["karpenter.k8s.aws/"+k] = v
			}
			if got := typeLabels(tt.info); !maps.Equal(got, want) {
				t.Errorf("typeLabels(%s) =\n%v\nwant\n%v", tt.info.InstanceType, got, want)
			}
		})
	}
}
