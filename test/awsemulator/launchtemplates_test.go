package awsemulator_test

import (
	"context"
	"encoding/base64"
	"reflect"
	"slices"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"karpenter.sh/karpenter/test/awsemulator"
)

// nodeClassUserData is an AL2023 MIME document: nodeadm's NodeConfig beside the user's part.
const nodeClassUserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: demo
--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo hello
--//--
`

// nodeClassTemplate is a launch template as an EC2NodeClass makes it (upstream's builder):
// block devices, IMDS options, monitoring, one network interface carrying the security groups
// and the public-address choice, user data, tags for what launches and for the template.
func nodeClassTemplate(name string) *ec2.CreateLaunchTemplateInput {
	tags := []ec2types.Tag{{Key: sdkaws.String("karpenter.k8s.aws/ec2nodeclass"), Value: sdkaws.String("default")}, {Key: sdkaws.String("team"), Value: sdkaws.String("ml")}}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            sdkaws.String("ami-0123456789abcdef0"),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("KarpenterNodeInstanceProfile")},
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{
				{DeviceName: sdkaws.String("/dev/xvda"), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
					VolumeSize: sdkaws.Int32(100), VolumeType: ec2types.VolumeTypeGp3, Iops: sdkaws.Int32(10000), Throughput: sdkaws.Int32(125),
					Encrypted: sdkaws.Bool(true), DeleteOnTermination: sdkaws.Bool(true), KmsKeyId: sdkaws.String("arn:aws:kms:us-west-2:123456789012:key/k"),
				}},
				{DeviceName: sdkaws.String("/dev/xvdb"), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: sdkaws.Int32(20), VolumeType: ec2types.VolumeTypeGp2, SnapshotId: sdkaws.String("snap-0123")}},
			},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpEndpoint: ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled, HttpProtocolIpv6: ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
				HttpPutResponseHopLimit: sdkaws.Int32(1), HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired,
				InstanceMetadataTags: ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
			},
			Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: sdkaws.Bool(true)},
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
				DeviceIndex: sdkaws.Int32(0), NetworkCardIndex: sdkaws.Int32(0), InterfaceType: sdkaws.String("interface"),
				Groups: []string{"sg-nodes", "sg-other"}, AssociatePublicIpAddress: sdkaws.Bool(false), Ipv4PrefixCount: sdkaws.Int32(2),
			}},
			UserData:          sdkaws.String(base64.StdEncoding.EncodeToString([]byte(nodeClassUserData))),
			Placement:         &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags}, {ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: tags}},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	}
}

// TestLaunchTemplateContentIsReadBack: everything an EC2NodeClass puts in a launch template
// comes back out of the emulator's Go API (and the admin API), user data decoded, so that a
// test can check each field of what Karpenter sent.
func TestLaunchTemplateContentIsReadBack(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	created, err := client.CreateLaunchTemplate(ctx, nodeClassTemplate("karpenter.k8s.aws/1234"))
	if err != nil {
		t.Fatal(err)
	}

	lt, ok := e.LaunchTemplate("karpenter.k8s.aws/1234")
	if !ok {
		t.Fatal("the launch template is not found by name")
	}
	i32, yes := func(v int32) *int32 { return &v }, func(v bool) *bool { return &v }(true)
	no := func(v bool) *bool { return &v }(false)
	tags := map[string]string{"karpenter.k8s.aws/ec2nodeclass": "default", "team": "ml"}
	want := awsemulator.LaunchTemplate{
		LaunchTemplateID: sdkaws.ToString(created.LaunchTemplate.LaunchTemplateId), LaunchTemplateName: "karpenter.k8s.aws/1234", Tags: tags,
		Data: awsemulator.LaunchTemplateData{
			ImageID: "ami-0123456789abcdef0", IAMInstanceProfileName: "KarpenterNodeInstanceProfile",
			UserData: base64.StdEncoding.EncodeToString([]byte(nodeClassUserData)), DecodedUserData: nodeClassUserData,
			TagSpecifications: map[string]map[string]string{"network-interface": tags, "spot-instances-request": tags},
			BlockDeviceMappings: []awsemulator.LaunchTemplateBlockDeviceMapping{
				{DeviceName: "/dev/xvda", EBS: &awsemulator.LaunchTemplateEBS{
					VolumeSize: i32(100), VolumeType: "gp3", IOPS: i32(10000), Throughput: i32(125), Encrypted: yes, DeleteOnTermination: yes,
					KMSKeyID: "arn:aws:kms:us-west-2:123456789012:key/k",
				}},
				{DeviceName: "/dev/xvdb", EBS: &awsemulator.LaunchTemplateEBS{VolumeSize: i32(20), VolumeType: "gp2", SnapshotID: "snap-0123"}},
			},
			MetadataOptions: &awsemulator.LaunchTemplateMetadataOptions{
				HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: i32(1), HTTPTokens: "required", InstanceMetadataTags: "disabled",
			},
			DetailedMonitoring: yes,
			NetworkInterfaces: []awsemulator.LaunchTemplateNetworkInterface{{
				DeviceIndex: i32(0), NetworkCardIndex: i32(0), InterfaceType: "interface", SecurityGroupIDs: []string{"sg-nodes", "sg-other"},
				AssociatePublicIPAddress: no, IPv4PrefixCount: i32(2),
			}},
			Placement: &awsemulator.LaunchTemplatePlacement{Tenancy: "default"},
		},
	}
	if !reflect.DeepEqual(lt, want) {
		t.Errorf("launch template =\n%+v\nwant\n%+v", lt, want)
	}
	if all := e.LaunchTemplates(); len(all) != 1 || !reflect.DeepEqual(all[0], want) {
		t.Errorf("LaunchTemplates() = %+v", all)
	}
	var admin struct {
		LaunchTemplates []awsemulator.LaunchTemplate `json:"launchTemplates"`
	}
	getJSON(t, sdkaws.ToString(cfg.BaseEndpoint)+"/_emulator/ec2/launchtemplates", &admin)
	if len(admin.LaunchTemplates) != 1 || !reflect.DeepEqual(admin.LaunchTemplates[0], want) {
		t.Errorf("admin API = %+v", admin.LaunchTemplates)
	}
	if _, ok := e.LaunchTemplate("missing"); ok {
		t.Error("a missing launch template is found")
	}

	// What the Go API hands out is a copy: changing it changes nothing in the emulator.
	lt.Data.BlockDeviceMappings[0].EBS.VolumeSize, lt.Data.NetworkInterfaces[0].SecurityGroupIDs[0], lt.Tags["team"] = i32(1), "sg-changed", "changed"
	lt.Data.TagSpecifications["network-interface"]["team"] = "changed"
	if again, _ := e.LaunchTemplate("karpenter.k8s.aws/1234"); !reflect.DeepEqual(again, want) {
		t.Errorf("after changing the copy = %+v", again)
	}
}

// TestLaunchFromATemplateWithNetworkInterfaces: when the security groups are on the network
// interface (as upstream puts them), a launch gets them, and checks that they exist.
func TestLaunchFromATemplateWithNetworkInterfaces(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	if _, err := client.CreateLaunchTemplate(ctx, nodeClassTemplate("nodes")); err != nil {
		t.Fatal(err)
	}
	out, err := client.CreateFleet(ctx, fleetInput("", "on-demand", 1, "m5.large"))
	if err != nil || len(launched(out)) != 1 {
		t.Fatalf("CreateFleet = %+v, %v", out, err)
	}
	described, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: launched(out)})
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, g := range described.Reservations[0].Instances[0].SecurityGroups {
		groups = append(groups, sdkaws.ToString(g.GroupId))
	}
	if !slices.Equal(groups, []string{"sg-nodes", "sg-other"}) {
		t.Errorf("instance security groups = %v", groups)
	}

	missing := nodeClassTemplate("missing-group")
	missing.LaunchTemplateData.NetworkInterfaces[0].Groups = []string{"sg-missing"}
	if _, err := client.CreateLaunchTemplate(ctx, missing); err != nil {
		t.Fatal(err)
	}
	in := fleetInput("", "on-demand", 1, "m5.large")
	in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = sdkaws.String("missing-group")
	out, err = client.CreateFleet(ctx, in)
	if err != nil || len(launched(out)) != 0 || len(out.Errors) == 0 || sdkaws.ToString(out.Errors[0].ErrorCode) != "InvalidGroup.NotFound" {
		t.Errorf("launching with a security group that does not exist = %+v, %v", out, err)
	}
}

// TestCreateLaunchTemplateRefusesWhatEC2Refuses: user data that is not base64 or too large,
// IMDS options and volume types EC2 does not know.
func TestCreateLaunchTemplateRefusesWhatEC2Refuses(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	for _, tt := range []struct {
		name     string
		change   func(d *ec2types.RequestLaunchTemplateData)
		wantCode string
	}{
		{"as a node class makes it", func(*ec2types.RequestLaunchTemplateData) {}, ""},
		{"user data not base64", func(d *ec2types.RequestLaunchTemplateData) { d.UserData = sdkaws.String("#!/bin/bash\necho hi") }, "InvalidUserData.Malformed"},
		{"user data over 16 KiB", func(d *ec2types.RequestLaunchTemplateData) {
			d.UserData = sdkaws.String(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 16*1024+1))))
		}, "InvalidUserData.Malformed"},
		{"user data of 16 KiB", func(d *ec2types.RequestLaunchTemplateData) {
			d.UserData = sdkaws.String(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 16*1024))))
		}, ""},
		{"http tokens", func(d *ec2types.RequestLaunchTemplateData) { d.MetadataOptions.HttpTokens = "sometimes" }, "InvalidParameterValue"},
		{"http endpoint", func(d *ec2types.RequestLaunchTemplateData) { d.MetadataOptions.HttpEndpoint = "on" }, "InvalidParameterValue"},
		{"hop limit above 64", func(d *ec2types.RequestLaunchTemplateData) {
			d.MetadataOptions.HttpPutResponseHopLimit = sdkaws.Int32(65)
		}, "InvalidParameterValue"},
		{"hop limit 0", func(d *ec2types.RequestLaunchTemplateData) {
			d.MetadataOptions.HttpPutResponseHopLimit = sdkaws.Int32(0)
		}, "InvalidParameterValue"},
		{"volume type", func(d *ec2types.RequestLaunchTemplateData) { d.BlockDeviceMappings[1].Ebs.VolumeType = "ssd" }, "InvalidParameterValue"},
		{"volume size 0", func(d *ec2types.RequestLaunchTemplateData) { d.BlockDeviceMappings[1].Ebs.VolumeSize = sdkaws.Int32(0) }, "InvalidParameterValue"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeClassTemplate("lt-" + strings.ReplaceAll(tt.name, " ", "-"))
			tt.change(in.LaunchTemplateData)
			_, err := client.CreateLaunchTemplate(context.Background(), in)
			if code := errorCode(err); code != tt.wantCode {
				t.Errorf("error code = %q (%v), want %q", code, err, tt.wantCode)
			}
		})
	}
}
