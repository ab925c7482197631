package instancetype

import (
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestKubeReservedCPU(t *testing.T) {
	for _, tt := range []struct{ vcpus, want int64 }{
		{1, 60}, {2, 70}, {3, 75}, {4, 80}, {5, 82}, {8, 90}, {16, 110}, {96, 310},
	} {
		if got := kubeReservedCPUMillis(tt.vcpus); got != tt.want {
			t.Errorf("kubeReservedCPUMillis(%d) = %dm, want %dm", tt.vcpus, got, tt.want)
		}
	}
}

func TestMaxPodsAndMemory(t *testing.T) {
	for _, tt := range []struct {
		name                            string
		enis, ipv4, pods                int64
		nominalMiB, capacityMiB, kubeMi int64
	}{
		{"t3.micro", 2, 2, 4, 1024, 947, 299},
		{"m5.large", 3, 10, 29, 8192, 7577, 574},
		{"m5.4xlarge", 8, 30, 234, 65536, 60620, 2829},
		{"m5.24xlarge", 15, 50, 737, 393216, 363724, 8362},
	} {
		if got := maxPods(tt.enis, tt.ipv4); got != tt.pods {
			t.Errorf("%s: maxPods = %d, want %d", tt.name, got, tt.pods)
		}
		if got := (nodeShape{vmMemoryOverhead: DefaultVMMemoryOverhead}).memoryCapacityMiB(tt.nominalMiB); got != tt.capacityMiB {
			t.Errorf("%s: memory capacity = %dMi, want %dMi", tt.name, got, tt.capacityMiB)
		}
		if got := kubeReservedMemoryMiB(tt.pods); got != tt.kubeMi {
			t.Errorf("%s: kube-reserved memory = %dMi, want %dMi", tt.name, got, tt.kubeMi)
		}
	}
}

func TestEBSVolumeLimit(t *testing.T) {
	network := func(enis int32) *ec2types.NetworkInfo {
		return &ec2types.NetworkInfo{MaximumNetworkInterfaces: sdkaws.Int32(enis)}
	}
	for _, tt := range []struct {
		name string
		info ec2types.InstanceTypeInfo
		want int64
	}{
		{"nitro, shared slots from the API", ec2types.InstanceTypeInfo{Hypervisor: ec2types.InstanceTypeHypervisorNitro, NetworkInfo: network(3),
			EbsInfo: &ec2types.EbsInfo{MaximumEbsAttachments: sdkaws.Int32(28), AttachmentLimitType: ec2types.AttachmentLimitTypeShared}}, 24},
		{"nitro, the API silent", ec2types.InstanceTypeInfo{Hypervisor: ec2types.InstanceTypeHypervisorNitro, NetworkInfo: network(8)}, 19},
		{"nitro with NVMe instance store and GPUs", ec2types.InstanceTypeInfo{Hypervisor: ec2types.InstanceTypeHypervisorNitro, NetworkInfo: network(4),
			InstanceStorageInfo: &ec2types.InstanceStorageInfo{NvmeSupport: ec2types.EphemeralNvmeSupportRequired, Disks: []ec2types.DiskInfo{{Count: sdkaws.Int32(2)}}},
			GpuInfo:             &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Count: sdkaws.Int32(4)}}}}, 17},
		{"dedicated slots", ec2types.InstanceTypeInfo{Hypervisor: ec2types.InstanceTypeHypervisorNitro, NetworkInfo: network(15),
			EbsInfo: &ec2types.EbsInfo{MaximumEbsAttachments: sdkaws.Int32(128), AttachmentLimitType: ec2types.AttachmentLimitTypeDedicated}}, 127},
		{"xen", ec2types.InstanceTypeInfo{Hypervisor: ec2types.InstanceTypeHypervisorXen, NetworkInfo: network(8)}, 38},
		{"more interfaces than slots still attaches one", ec2types.InstanceTypeInfo{Hypervisor: ec2types.InstanceTypeHypervisorNitro, NetworkInfo: network(50)}, 1},
	} {
		if got := ebsVolumeLimit(tt.info); got != tt.want {
			t.Errorf("%s: ebsVolumeLimit = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestLaunchable(t *testing.T) {
	info := func(arch ec2types.ArchitectureType, virt ec2types.VirtualizationType, metal bool) ec2types.InstanceTypeInfo {
		return ec2types.InstanceTypeInfo{
			ProcessorInfo:                &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{arch}},
			SupportedVirtualizationTypes: []ec2types.VirtualizationType{virt},
			BareMetal:                    sdkaws.Bool(metal),
			VCpuInfo:                     &ec2types.VCpuInfo{DefaultVCpus: sdkaws.Int32(2)},
			MemoryInfo:                   &ec2types.MemoryInfo{SizeInMiB: sdkaws.Int64(1024)},
			NetworkInfo:                  &ec2types.NetworkInfo{},
		}
	}
	for _, tt := range []struct {
		name      string
		info      ec2types.InstanceTypeInfo
		bareMetal bool
		want      bool
	}{
		{"x86_64 hvm", info(ec2types.ArchitectureTypeX8664, ec2types.VirtualizationTypeHvm, false), false, true},
		{"arm64 hvm", info(ec2types.ArchitectureTypeArm64, ec2types.VirtualizationTypeHvm, false), false, true},
		{"paravirtual", info(ec2types.ArchitectureTypeX8664, ec2types.VirtualizationTypeParavirtual, false), false, false},
		{"32-bit only", info(ec2types.ArchitectureTypeI386, ec2types.VirtualizationTypeHvm, false), false, false},
		{"mac", info(ec2types.ArchitectureTypeX8664Mac, ec2types.VirtualizationTypeHvm, false), false, false},
		{"bare metal by default", info(ec2types.ArchitectureTypeX8664, ec2types.VirtualizationTypeHvm, true), false, false},
		{"bare metal allowed", info(ec2types.ArchitectureTypeX8664, ec2types.VirtualizationTypeHvm, true), true, true},
	} {
		if got := launchable(tt.info, tt.bareMetal); got != tt.want {
			t.Errorf("%s: launchable = %v, want %v", tt.name, got, tt.want)
		}
	}
}
