package aws

import (
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
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
		if got := memoryCapacityMiB(tt.nominalMiB); got != tt.capacityMiB {
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

func TestAMIParameters(t *testing.T) {
	for _, tt := range []struct {
		version, arch, want string
	}{
		{"1.34", "amd64", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		{"1.33", "arm64", "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id"},
		{"1.34", "s390x", ""},
	} {
		got, err := amiParameter(tt.version, tt.arch)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("amiParameter(%s, %s) = %q, %v, want %q", tt.version, tt.arch, got, err, tt.want)
		}
	}
}

func TestUserDataIsStableAndQuotesNothing(t *testing.T) {
	in := nodeBootstrap{
		ClusterName: "demo", ClusterEndpoint: "https://e", ServiceCIDR: "10.100.0.0/16", MaxPods: 29,
		Labels: map[string]string{"team": "ml", "karpenter.sh/provisioner-name": "default"},
		Taints: []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}, {Key: "it's", Effect: corev1.TaintEffectNoExecute}},
	}
	first, err := userData(in)
	if err != nil {
		t.Fatal(err)
	}
	// Equal inputs must render equal bytes, or every launch would make a new template.
	for range 10 {
		if again, _ := userData(in); again != first {
			t.Fatalf("user data differs between renders:\n%s\n%s", first, again)
		}
	}
	// nodeadm passes flags to the kubelet as they are: no shell quoting to undo.
	if want := `--register-with-taints=gpu=true:NoSchedule,it's:NoExecute`; !strings.Contains(first, want) {
		t.Errorf("user data lacks %q:\n%s", want, first)
	}
	if plain, _ := userData(nodeBootstrap{ClusterName: "demo"}); strings.Contains(plain, "flags:") {
		t.Errorf("user data without labels or taints passes kubelet flags:\n%s", plain)
	}
}

func TestLaunchTemplateNames(t *testing.T) {
	in := launchTemplateInputs{AMI: "ami-1", SecurityGroups: []string{"sg-1"}, InstanceProfile: "p", UserData: "#!/bin/bash"}
	other := in
	other.UserData = "#!/bin/sh"
	name := in.name("demo")
	if name != in.name("demo") {
		t.Error("equal inputs have different names")
	}
	if name == other.name("demo") || name == in.name("other") {
		t.Error("different inputs or clusters share a name")
	}
	if len(name) > 128 || !strings.HasPrefix(name, "karpenter.sh/") {
		t.Errorf("name %q is not a launch template name Karpenter makes", name)
	}
}

func TestSelectorFilters(t *testing.T) {
	got := selectorFilters(map[string]string{"kubernetes.io/cluster/demo": "*", "Name": "private"})
	want := []string{"tag:Name=private", "tag-key=kubernetes.io/cluster/demo"}
	if len(got) != len(want) {
		t.Fatalf("filters = %v, want %v", got, want)
	}
	for i, f := range got {
		if s := sdkaws.ToString(f.Name) + "=" + strings.Join(f.Values, ","); s != want[i] {
			t.Errorf("filter %d = %s, want %s", i, s, want[i])
		}
	}
}

func TestClientToken(t *testing.T) {
	configs := func(subnet string) []ec2types.FleetLaunchTemplateConfigRequest {
		return []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: sdkaws.String("t")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: sdkaws.String(subnet)}},
		}}
	}
	if clientToken("", "spot", 1, configs("a")) != nil {
		t.Error("a launch without a key got a fixed token: two launches would be one")
	}
	a := sdkaws.ToString(clientToken("launch-1", "spot", 1, configs("a")))
	if a != sdkaws.ToString(clientToken("launch-1", "spot", 1, configs("a"))) {
		t.Error("a retried launch has a new token: it would launch twice")
	}
	for _, other := range []*string{clientToken("launch-2", "spot", 1, configs("a")), clientToken("launch-1", "on-demand", 1, configs("a")), clientToken("launch-1", "spot", 1, configs("b")), clientToken("launch-1", "spot", 2, configs("a"))} {
		if sdkaws.ToString(other) == a {
			t.Error("a different launch reuses a token: EC2 would answer with the other's instance")
		}
	}
	if len(a) > 64 {
		t.Errorf("token %q is longer than EC2's 64 characters", a)
	}
}

func TestParseOnDemandPrice(t *testing.T) {
	entry := `{"product":{"attributes":{"instanceType":"m5.large","operatingSystem":"Linux"}},"terms":{"OnDemand":{"X.JRTCKXETXF":{"priceDimensions":{"X.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","pricePerUnit":{"USD":"0.0960000000"}}}}}}}`
	typ, price, err := parseOnDemandPrice(entry)
	if err != nil || typ != "m5.large" || price != 0.096 {
		t.Errorf("parseOnDemandPrice = %q, %g, %v; want m5.large, 0.096", typ, price, err)
	}
	if _, _, err := parseOnDemandPrice(`{"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"pricePerUnit":{"USD":"x"}}}}}}}`); err == nil {
		t.Error("a price that is not a number was accepted")
	}
}
