package aws_test

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/test/awsemulator"
)

// classSeed is launchSeed with an AMI of each architecture for the class's status to name.
const classSeed = vpcSeed + `
instanceProfiles: [KarpenterNodeInstanceProfile-demo]
images: [ami-0000000000000a001, ami-0000000000000a002]
`

const (
	amdAMI = "ami-0000000000000a001"
	armAMI = "ami-0000000000000a002"
)

func archRequirement(arch string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
}

// readyClass is an AL2023 EC2NodeClass as its controller resolved it: us-west-2a's small subnet
// first (the status keeps no free addresses, so the zone's first is used), an AMI per
// architecture.
func readyClass() *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "general"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             "KarpenterNodeRole-demo",
			Tags:             map[string]string{"cost-center": "42"},
		},
		Status: awsv1.EC2NodeClassStatus{
			Subnets: []awsv1.Subnet{
				{ID: "subnet-a2", Zone: "us-west-2a"}, {ID: "subnet-a", Zone: "us-west-2a"}, {ID: "subnet-b", Zone: "us-west-2b"},
			},
			SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-nodes", Name: "demo-nodes"}},
			AMIs:            []awsv1.AMI{{ID: amdAMI, Requirements: archRequirement("amd64")}, {ID: armAMI, Requirements: archRequirement("arm64")}},
			InstanceProfile: "KarpenterNodeInstanceProfile-demo",
		},
	}
}

func classRequest(candidates []cloudprovider.Candidate, class *awsv1.EC2NodeClass) cloudprovider.LaunchRequest {
	return cloudprovider.LaunchRequest{
		Candidates:   candidates,
		NodePoolName: "default",
		Labels:       map[string]string{"team": "ml"},
		Taints:       []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}},
		NodeClass:    class,
	}
}

// userDataParts splits a MIME multi-part user data document into its parts' content types and
// bodies.
func userDataParts(t *testing.T, document string) (types, bodies []string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(document))
	if err != nil {
		t.Fatalf("user data is not a MIME document, %v:\n%s", err, document)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return types, bodies
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(part)
		types, bodies = append(types, part.Header.Get("Content-Type")), append(bodies, string(body))
	}
}

// A NodePool's launch reads only its class's status and spec: an AMI per architecture, the
// status's security groups, instance profile and subnets, the class's volumes, metadata options,
// monitoring, kubelet settings and tags; the user's user data first.
func TestNodePoolLaunchesFromItsEC2NodeClass(t *testing.T) {
	e := newInstancesEnv(t, classSeed, 0)
	e.refresh(t)
	class := readyClass()
	class.Spec.UserData = ptr.To("#!/bin/bash\necho hello\n")
	class.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](50), SystemReserved: map[string]string{"cpu": "100m"}, ClusterDNS: []string{"10.100.0.10"}}
	class.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Gi")), VolumeType: ptr.To("gp3"), IOPS: ptr.To[int64](4000), Encrypted: ptr.To(true)}}}
	class.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPTokens: ptr.To("required"), HTTPPutResponseHopLimit: ptr.To[int64](2)}
	class.Spec.DetailedMonitoring = ptr.To(true)

	launched, err := e.instances.Create(context.Background(), classRequest(e.candidates(t, "m5.large/us-west-2a/on-demand", "m6g.large/us-west-2b/on-demand"), class))
	if err != nil {
		t.Fatal(err)
	}
	if got := launched[0]; got.Labels["karpenter.sh/nodepool"] != "default" || got.Labels["team"] != "ml" || got.Labels["karpenter.sh/provisioner-name"] != "" {
		t.Errorf("labels = %v, want the NodePool's and the request's", got.Labels)
	}
	// Listed as the cluster's, for garbage collection and a resumed launch to find.
	listed, err := e.instances.List(context.Background())
	if err != nil || len(listed) != 1 || listed[0].ID != launched[0].ID || listed[0].Labels["karpenter.sh/nodepool"] != "default" {
		t.Errorf("List = %v, %v; want the NodePool's instance, labelled", listed, err)
	}
	fleet := e.emulator.FleetRequests()[0]
	wantTags := map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "general", "eks:eks-cluster-name": "demo",
		"kubernetes.io/cluster/demo": "owned", "cost-center": "42",
	}
	if diff := cmp.Diff(wantTags, fleet.TagSpecifications["instance"]); diff != "" {
		t.Errorf("instance tags (-want +got):\n%s", diff)
	}
	var overrides []string
	for _, c := range fleet.LaunchTemplateConfigs {
		for _, o := range c.Overrides {
			overrides = append(overrides, o.InstanceType+"@"+o.SubnetID)
		}
	}
	if diff := cmp.Diff([]string{"m5.large@subnet-a2", "m6g.large@subnet-b"}, overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}

	for instanceType, ami := range map[string]string{"m5.large": amdAMI, "m6g.large": armAMI} {
		checkClassTemplate(t, e, instanceType, ami)
	}
}

// checkClassTemplate reads back the launch template the instance type launched from: the
// class's AMI for its architecture, status, devices, metadata options, tags and user data.
func checkClassTemplate(t *testing.T, e *instancesEnv, instanceType, ami string) {
	t.Helper()
	lt := templateOf(t, e, instanceType)
	data := lt.Data
	if data.ImageID != ami || !slices.Equal(data.SecurityGroupIDs, []string{"sg-nodes"}) || data.IAMInstanceProfileName != "KarpenterNodeInstanceProfile-demo" {
		t.Errorf("%s: template holds AMI %s, groups %v, profile %s; want %s, the status's groups and profile", instanceType, data.ImageID, data.SecurityGroupIDs, data.IAMInstanceProfileName, ami)
	}
	wantDevices := []awsemulator.LaunchTemplateBlockDeviceMapping{{DeviceName: "/dev/xvda",
		EBS: &awsemulator.LaunchTemplateEBS{VolumeSize: ptr.To[int32](100), VolumeType: "gp3", IOPS: ptr.To[int32](4000), Encrypted: ptr.To(true)}}}
	if diff := cmp.Diff(wantDevices, data.BlockDeviceMappings); diff != "" {
		t.Errorf("%s: block devices (-want +got):\n%s", instanceType, diff)
	}
	if m := data.MetadataOptions; m == nil || m.HTTPTokens != "required" || ptr.Deref(m.HTTPPutResponseHopLimit, 0) != 2 || m.HTTPEndpoint != "enabled" {
		t.Errorf("%s: metadata options = %+v, want the class's", instanceType, m)
	}
	if !ptr.Deref(data.DetailedMonitoring, false) {
		t.Errorf("%s: detailed monitoring is off", instanceType)
	}
	if lt.Tags["karpenter.k8s.aws/ec2nodeclass"] != "general" || lt.Tags["cost-center"] != "42" || data.TagSpecifications["volume"]["cost-center"] != "42" {
		t.Errorf("%s: template tags %v, volume tags %v; want the class's", instanceType, lt.Tags, data.TagSpecifications["volume"])
	}
	types, bodies := userDataParts(t, data.DecodedUserData)
	if diff := cmp.Diff([]string{`text/x-shellscript; charset="us-ascii"`, "application/node.eks.aws"}, types); diff != "" {
		t.Fatalf("%s: user data parts (-want +got):\n%s", instanceType, diff)
	}
	var config nodeConfig
	if err := yaml.UnmarshalStrict([]byte(bodies[1]), &config); err != nil {
		t.Fatalf("%s: Karpenter's part is not a NodeConfig, %v", instanceType, err)
	}
	kubelet := config.Spec.Kubelet
	if config.Spec.Cluster.Name != "demo" || config.Spec.Cluster.CIDR == "" || kubelet.Config["maxPods"] != float64(50) ||
		!cmp.Equal(kubelet.Config["systemReserved"], map[string]any{"cpu": "100m"}) || !cmp.Equal(kubelet.Config["clusterDNS"], []any{"10.100.0.10"}) ||
		!slices.Equal(kubelet.Flags, []string{"--node-labels=karpenter.sh/nodepool=default,team=ml", "--register-with-taints=dedicated=ml:NoSchedule,karpenter.sh/unregistered:NoExecute"}) {
		t.Errorf("%s: NodeConfig = %+v", instanceType, config.Spec)
	}
}

// Each family's user data and defaults, read back from the templates EC2 received.
func TestEC2NodeClassFamiliesAndDefaults(t *testing.T) {
	for _, tt := range []struct {
		name  string
		class func(*awsv1.EC2NodeClass)
		check func(t *testing.T, data awsemulator.LaunchTemplateData)
	}{
		{
			name:  "AL2023 defaults: a 20 GiB encrypted gp3 root volume, IMDSv2 at one hop",
			class: func(*awsv1.EC2NodeClass) {},
			check: func(t *testing.T, data awsemulator.LaunchTemplateData) {
				want := []awsemulator.LaunchTemplateBlockDeviceMapping{{DeviceName: "/dev/xvda", EBS: &awsemulator.LaunchTemplateEBS{VolumeSize: ptr.To[int32](20), VolumeType: "gp3", Encrypted: ptr.To(true)}}}
				if diff := cmp.Diff(want, data.BlockDeviceMappings); diff != "" {
					t.Errorf("block devices (-want +got):\n%s", diff)
				}
				want2 := &awsemulator.LaunchTemplateMetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: ptr.To[int32](1), HTTPTokens: "required"}
				if diff := cmp.Diff(want2, data.MetadataOptions); diff != "" {
					t.Errorf("metadata options (-want +got):\n%s", diff)
				}
				if data.DetailedMonitoring != nil || len(data.NetworkInterfaces) != 0 {
					t.Errorf("monitoring %v and interfaces %+v set without the class asking", data.DetailedMonitoring, data.NetworkInterfaces)
				}
			},
		},
		{
			name: "AL2023 merges the user's NodeConfig before Karpenter's",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.UserData = ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n")
			},
			check: func(t *testing.T, data awsemulator.LaunchTemplateData) {
				types, bodies := userDataParts(t, data.DecodedUserData)
				if len(types) != 2 || types[0] != "application/node.eks.aws" || !strings.Contains(bodies[0], "shutdownGracePeriod") || !strings.Contains(bodies[1], "name: demo") {
					t.Errorf("user data parts %v:\n%s", types, data.DecodedUserData)
				}
			},
		},
		{
			name: "Bottlerocket: TOML settings over the user's, an OS and a data volume",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				c.Spec.UserData = ptr.To("[settings.kubernetes.node-labels]\nowner = \"me\"\n")
				c.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](20)}
			},
			check: func(t *testing.T, data awsemulator.LaunchTemplateData) {
				var settings struct {
					Settings struct {
						Kubernetes map[string]any `toml:"kubernetes"`
					} `toml:"settings"`
				}
				if _, err := toml.Decode(data.DecodedUserData, &settings); err != nil {
					t.Fatalf("user data is not TOML, %v:\n%s", err, data.DecodedUserData)
				}
				k := settings.Settings.Kubernetes
				if k["cluster-name"] != "demo" || k["api-server"] != "https://demo.gr7.us-west-2.eks.amazonaws.com" || k["max-pods"] != int64(20) ||
					!cmp.Equal(k["node-labels"], map[string]any{"owner": "me", "team": "ml", "karpenter.sh/nodepool": "default"}) ||
					!cmp.Equal(k["node-taints"], map[string]any{"dedicated": []any{"ml:NoSchedule"}, "karpenter.sh/unregistered": []any{":NoExecute"}}) {
					t.Errorf("settings.kubernetes = %v", k)
				}
				if len(data.BlockDeviceMappings) != 2 || *data.BlockDeviceMappings[0].EBS.VolumeSize != 4 || data.BlockDeviceMappings[1].DeviceName != "/dev/xvdb" {
					t.Errorf("block devices = %+v, want Bottlerocket's two", data.BlockDeviceMappings)
				}
			},
		},
		{
			name:  "AL2023 RAID0: nodeadm makes one array of the instance-store disks",
			class: func(c *awsv1.EC2NodeClass) { c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) },
			check: checkNodeadmRAID0,
		},
		{
			name: "Bottlerocket RAID0: a bootstrap command binds the release's default directories",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
				// The release is read from the name of the AMI launched.
				c.Status.AMIs[0].Name = "bottlerocket-aws-k8s-1.34-x86_64-v1.58.0-0123abcd"
			},
			check: checkBottlerocketBindsDefaultDirectories,
		},
		{
			name: "Custom: the user's user data as given, the AMI's volumes",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: amdAMI}}
				c.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
				c.Spec.UserData = ptr.To("#!/bin/bash\n/my/bootstrap\n")
			},
			check: func(t *testing.T, data awsemulator.LaunchTemplateData) {
				if data.DecodedUserData != "#!/bin/bash\n/my/bootstrap\n" || len(data.BlockDeviceMappings) != 0 {
					t.Errorf("user data %q, block devices %+v; want the user's, none", data.DecodedUserData, data.BlockDeviceMappings)
				}
			},
		},
		{
			name:  "a public address puts the groups on the primary interface",
			class: func(c *awsv1.EC2NodeClass) { c.Spec.AssociatePublicIPAddress = ptr.To(true) },
			check: func(t *testing.T, data awsemulator.LaunchTemplateData) {
				if len(data.NetworkInterfaces) != 1 || !ptr.Deref(data.NetworkInterfaces[0].AssociatePublicIPAddress, false) ||
					!slices.Equal(data.NetworkInterfaces[0].SecurityGroupIDs, []string{"sg-nodes"}) || len(data.SecurityGroupIDs) != 0 {
					t.Errorf("interfaces %+v, groups %v; want one public interface with the groups", data.NetworkInterfaces, data.SecurityGroupIDs)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newInstancesEnv(t, classSeed, 0)
			e.refresh(t)
			class := readyClass()
			tt.class(class)
			launched := e.create(t, classRequest(e.candidates(t, "m5.large/us-west-2a/on-demand"), class))
			lt := templateOf(t, e, "m5.large")
			if lt.Data.ImageID != amdAMI || launched.ImageID != amdAMI {
				t.Errorf("template AMI %s, instance AMI %s; want %s", lt.Data.ImageID, launched.ImageID, amdAMI)
			}
			tt.check(t, lt.Data)
		})
	}
}

// checkNodeadmRAID0 checks that Karpenter's NodeConfig has nodeadm make one RAID-0 array of the
// instance-store disks.
func checkNodeadmRAID0(t *testing.T, data awsemulator.LaunchTemplateData) {
	t.Helper()
	_, bodies := userDataParts(t, data.DecodedUserData)
	var config struct {
		Spec struct {
			Instance struct {
				LocalStorage struct {
					Strategy string `json:"strategy"`
				} `json:"localStorage"`
			} `json:"instance"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(bodies[len(bodies)-1]), &config); err != nil || config.Spec.Instance.LocalStorage.Strategy != "RAID0" {
		t.Errorf("NodeConfig's localStorage strategy = %q (%v), want RAID0:\n%s", config.Spec.Instance.LocalStorage.Strategy, err, data.DecodedUserData)
	}
}

// checkBottlerocketBindsDefaultDirectories checks that the Bottlerocket settings have a
// bootstrap command make the instance-store array and bind the release's default directories.
func checkBottlerocketBindsDefaultDirectories(t *testing.T, data awsemulator.LaunchTemplateData) {
	t.Helper()
	var settings struct {
		Settings struct {
			BootstrapCommands map[string]struct {
				Commands  [][]string `toml:"commands"`
				Mode      string     `toml:"mode"`
				Essential bool       `toml:"essential"`
			} `toml:"bootstrap-commands"`
		} `toml:"settings"`
	}
	if _, err := toml.Decode(data.DecodedUserData, &settings); err != nil {
		t.Fatalf("user data is not TOML, %v:\n%s", err, data.DecodedUserData)
	}
	command := settings.Settings.BootstrapCommands["000-mount-instance-storage"]
	want := [][]string{{"apiclient", "ephemeral-storage", "init"}, {"apiclient", "ephemeral-storage", "bind"}}
	if !cmp.Equal(want, command.Commands) || command.Mode != "always" || !command.Essential {
		t.Errorf("instance storage command = %+v, want %v, always, essential:\n%s", command, want, data.DecodedUserData)
	}
}

// Equal classes and nodes share a template; a change to the class makes another.
func TestEC2NodeClassTemplatesAreSharedByEqualInputs(t *testing.T) {
	e := newInstancesEnv(t, classSeed, 0)
	e.refresh(t)
	candidates := e.candidates(t, "m5.large/us-west-2a/on-demand")
	e.create(t, classRequest(candidates, readyClass()))
	e.create(t, classRequest(candidates, readyClass()))
	changed := readyClass()
	changed.Spec.DetailedMonitoring = ptr.To(true)
	e.create(t, classRequest(candidates, changed))
	if n := len(e.emulator.LaunchTemplates()); n != 2 {
		t.Errorf("%d templates, want 2: one shared by the equal classes, one for the changed class", n)
	}
}

// What the class's status lacks fails the launch as the user's to fix, naming the class's field.
func TestEC2NodeClassWithoutStatusNamesTheField(t *testing.T) {
	e := newInstancesEnv(t, classSeed, 0)
	e.refresh(t)
	candidates := e.candidates(t, "m5.large/us-west-2a/on-demand")
	for _, tt := range []struct {
		field, reason string
		class         func(*awsv1.EC2NodeClass)
	}{
		{"spec.subnetSelectorTerms", cloudprovider.ReasonInvalidSubnet, func(c *awsv1.EC2NodeClass) { c.Status.Subnets = nil }},
		{"spec.securityGroupSelectorTerms", cloudprovider.ReasonInvalidSecurityGroup, func(c *awsv1.EC2NodeClass) { c.Status.SecurityGroups = nil }},
		{"spec.amiSelectorTerms", cloudprovider.ReasonInvalidAMI, func(c *awsv1.EC2NodeClass) { c.Status.AMIs = nil }},
		{"spec.amiSelectorTerms", cloudprovider.ReasonInvalidAMI, func(c *awsv1.EC2NodeClass) { c.Status.AMIs = c.Status.AMIs[1:] }},
		{"spec.role", cloudprovider.ReasonInvalidInstanceProfile, func(c *awsv1.EC2NodeClass) { c.Status.InstanceProfile = "" }},
		// A family Karpenter renders no user data for: the field the family comes from.
		{"spec.amiSelectorTerms", cloudprovider.ReasonInvalidAMI, func(c *awsv1.EC2NodeClass) {
			c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
		}},
		{"spec.amiFamily", cloudprovider.ReasonInvalidAMI, func(c *awsv1.EC2NodeClass) {
			c.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyWindows2022)
			c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-windows"}}
		}},
	} {
		class := readyClass()
		tt.class(class)
		_, err := e.instances.Create(context.Background(), classRequest(candidates, class))
		if required := cloudprovider.ActionRequired(err); required == nil || required.Field != tt.field || required.Reason != tt.reason {
			t.Errorf("Create = %v, want %s on %s", err, tt.reason, tt.field)
		}
	}
	// A Windows class lists no instance types silently: the NodePool would plan nothing and
	// never say why.
	windows := readyClass()
	windows.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	if _, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{NodeClass: windows}); cloudprovider.ActionRequired(err) == nil {
		t.Errorf("InstanceTypes of a Windows class = %v, want action required", err)
	}
	if _, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{NodeClass: &awsv1.EC2NodeClass{}}); cloudprovider.ActionRequired(err) == nil {
		t.Errorf("InstanceTypes of a class without status = %v, want action required", err)
	}
	// Another kind of node class, or none behind the interface, is no Provisioner's launch.
	for _, other := range []runtime.Object{&corev1.ConfigMap{}, (*awsv1.EC2NodeClass)(nil)} {
		r := classRequest(candidates, readyClass())
		r.NodeClass = other
		if _, err := e.instances.Create(context.Background(), r); err == nil {
			t.Errorf("Create from a %T node class succeeded", other)
		}
	}
	if len(e.emulator.FleetRequests()) != 0 {
		t.Error("a class lacking status launched")
	}
}

// A NodePool's types report the ephemeral storage its class gives the nodes: the root volume,
// or with RAID0 the NVMe instance store of the types that have one (the emulator reports
// DescribeInstanceTypes' instanceStorageInfo from its catalogue).
func TestEC2NodeClassInstanceTypesReportTheirEphemeralStorage(t *testing.T) {
	e := newInstancesEnv(t, classSeed, 0)
	e.refresh(t)
	for _, tt := range []struct {
		name  string
		class func(*awsv1.EC2NodeClass)
		want  map[string]string
	}{
		{"AL2023's default root volume", func(*awsv1.EC2NodeClass) {}, map[string]string{"c5d.large": "20Gi", "m5d.large": "20Gi", "c5.large": "20Gi"}},
		{"RAID0: the instance store where there is one", func(c *awsv1.EC2NodeClass) {
			c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
		}, map[string]string{"c5d.large": "50G", "m5d.large": "75G", "c5.large": "20Gi"}},
		{"RAID0 with a larger root volume for the types without", func(c *awsv1.EC2NodeClass) {
			c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
			c.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Gi"))}}}
		}, map[string]string{"c5d.large": "50G", "c5.large": "100Gi"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			class := readyClass()
			tt.class(class)
			types, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{NodeClass: class})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, it := range types {
				if _, ok := tt.want[it.Name]; ok {
					got[it.Name] = it.Capacity.StorageEphemeral().String()
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ephemeral storage (-want +got):\n%s", diff)
			}
		})
	}
}

// The ephemeral storage a NodePool plans with, capacity and allocatable, is what the emulator
// says a kubelet on the launched instance reports, for each AMI family, each computed on its own
// — the plan from the class, the emulator from the template's volumes and user data. The
// sandbox's node joiner registers an AL2023 instance's Node with it (it reads nodeadm user data
// only), so kube-scheduler there finds the room the plan counted on. A Provisioner's types
// report none, and so do its instances.
func TestEphemeralStorageIsWhatTheEmulatedInstanceReports(t *testing.T) {
	raid0 := func(c *awsv1.EC2NodeClass) { c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) }
	bottlerocket := func(c *awsv1.EC2NodeClass) {
		c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
		c.Status.AMIs[0].Name = "bottlerocket-aws-k8s-1.34-x86_64-v1.58.0-0123abcd"
	}
	volume := func(device, size string) *awsv1.BlockDeviceMapping {
		return &awsv1.BlockDeviceMapping{DeviceName: ptr.To(device), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse(size))}}
	}
	for _, tt := range []struct {
		name  string
		class func(*awsv1.EC2NodeClass)
	}{
		{"AL2023's default root volume", func(*awsv1.EC2NodeClass) {}},
		{"AL2023 RAID0", raid0},
		{"AL2 RAID0 with a 100 GiB root volume", func(c *awsv1.EC2NodeClass) {
			c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}
			c.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{volume("/dev/xvda", "100Gi")}
			raid0(c)
		}},
		{"Bottlerocket's default data volume", bottlerocket},
		{"Bottlerocket with a 60 GiB data volume", func(c *awsv1.EC2NodeClass) {
			bottlerocket(c)
			c.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{volume("/dev/xvda", "4Gi"), volume("/dev/xvdb", "60Gi")}
		}},
		{"Bottlerocket RAID0", func(c *awsv1.EC2NodeClass) { bottlerocket(c); raid0(c) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newInstancesEnv(t, classSeed, 0)
			e.refresh(t)
			class := readyClass()
			tt.class(class)
			types, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{NodeClass: class})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"c5d.large", "m5d.large", "c5.large"} {
				i := slices.IndexFunc(types, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
				if i < 0 {
					t.Fatalf("%s is not offered", name)
				}
				planned := types[i]
				if _, ok := planned.Capacity[corev1.ResourceEphemeralStorage]; !ok {
					t.Fatalf("%s: a NodePool's type plans no ephemeral storage", name)
				}
				launched := e.create(t, classRequest([]cloudprovider.Candidate{offering(t, planned, "us-west-2b", "on-demand")}, class))
				node := emulatedInstance(t, e, launched.ID)
				checkKubeletReports(t, name+" capacity", planned.Capacity, node.Capacity)
				checkKubeletReports(t, name+" allocatable", planned.Allocatable(), node.Allocatable)
			}
		})
	}
	t.Run("a Provisioner's", func(t *testing.T) {
		e := newInstancesEnv(t, classSeed, 0)
		e.refresh(t)
		planned := e.instanceTypes(t, "")["c5d.large"]
		launched := e.create(t, request([]cloudprovider.Candidate{offering(t, planned, "us-west-2b", "on-demand")}))
		node := emulatedInstance(t, e, launched.ID)
		checkKubeletReports(t, "capacity", planned.Capacity, node.Capacity)
		checkKubeletReports(t, "allocatable", planned.Allocatable(), node.Allocatable)
	})
}

// offering is the instance type's candidate in the zone and capacity type.
func offering(t *testing.T, it *cloudprovider.InstanceType, zone, capacityType string) cloudprovider.Candidate {
	t.Helper()
	i := slices.IndexFunc(it.Offerings, func(o cloudprovider.Offering) bool { return o.Zone == zone && o.CapacityType == capacityType })
	if i < 0 {
		t.Fatalf("%s has no %s offering in %s", it.Name, capacityType, zone)
	}
	return cloudprovider.Candidate{InstanceType: it, Offering: it.Offerings[i]}
}

// emulatedInstance is the emulator's view of the instance, with what its kubelet reports.
func emulatedInstance(t *testing.T, e *instancesEnv, id string) awsemulator.EC2Instance {
	t.Helper()
	for _, i := range e.emulator.EC2Instances() {
		if i.InstanceID == id {
			return i
		}
	}
	t.Fatalf("the emulator has no instance %s", id)
	return awsemulator.EC2Instance{}
}

// checkKubeletReports checks that the kubelet reports the ephemeral storage planned, or none
// when none is planned.
func checkKubeletReports(t *testing.T, what string, planned corev1.ResourceList, reported map[string]string) {
	t.Helper()
	plannedStorage, isPlanned := planned[corev1.ResourceEphemeralStorage]
	reportedValue, isReported := reported[string(corev1.ResourceEphemeralStorage)]
	if !isPlanned || !isReported {
		if isPlanned != isReported {
			t.Errorf("%s: ephemeral storage planned %v (%s), the kubelet reports %v (%s)", what, isPlanned, plannedStorage.String(), isReported, reportedValue)
		}
		return
	}
	reportedStorage, err := resource.ParseQuantity(reportedValue)
	if err != nil {
		t.Fatalf("%s: the kubelet reports ephemeral storage %q, %v", what, reportedValue, err)
	}
	if plannedStorage.Cmp(reportedStorage) != 0 {
		t.Errorf("%s: ephemeral storage planned %s, the kubelet reports %s", what, plannedStorage.String(), reportedStorage.String())
	}
}

// A NodePool's offerings are in the zones of its class's subnets, for the types its AMIs boot.
func TestEC2NodeClassInstanceTypesComeFromItsStatus(t *testing.T) {
	e := newInstancesEnv(t, classSeed, 0)
	e.refresh(t)
	class := readyClass()
	class.Status.Subnets = []awsv1.Subnet{{ID: "subnet-b", Zone: "us-west-2b"}}
	class.Status.AMIs = class.Status.AMIs[:1]
	// The provider block is a Provisioner's: a NodePool's is ignored.
	types, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{NodeClass: class, Provider: provider(`{"subnetSelector":{"Name":"private-a"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(types) == 0 {
		t.Fatal("no instance types")
	}
	for _, it := range types {
		if it.Labels[corev1.LabelArchStable] != "amd64" {
			t.Errorf("%s is %s, which no AMI of the class boots", it.Name, it.Labels[corev1.LabelArchStable])
		}
		for _, o := range it.Offerings {
			if o.Zone != "us-west-2b" {
				t.Errorf("%s is offered in %s, where the class has no subnet", it.Name, o.Zone)
			}
		}
	}

	// Sized as its kubelet settings make the nodes report: what the scheduler packs is what
	// the node will take.
	class.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}
	sized, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{NodeClass: class})
	if err != nil || len(sized) != len(types) {
		t.Fatalf("%d types, %v", len(sized), err)
	}
	for _, it := range sized {
		if it.Capacity.Pods().Value() != 110 {
			t.Errorf("%s takes %s pods, want the class's maxPods 110", it.Name, it.Capacity.Pods())
		}
	}
}
