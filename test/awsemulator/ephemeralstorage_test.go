package awsemulator_test

import (
	"context"
	"encoding/base64"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/test/awsemulator"
)

// classUserData is the user data Karpenter renders for a node of the family, RAID0 or not.
func classUserData(t *testing.T, family string, raid0 bool) string {
	t.Helper()
	bootstrap := amifamily.NodeBootstrap{
		ClusterName: "demo", ClusterEndpoint: "https://demo.example.com", ClusterCABundle: []byte("ca"), ServiceCIDR: "10.100.0.0/16", MaxPods: 29,
		AMIName: "bottlerocket-aws-k8s-1.34-x86_64-v1.58.0-0123abcd",
	}
	if raid0 {
		bootstrap.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
	}
	userData, err := amifamily.ClassUserData(family, bootstrap, "")
	if err != nil {
		t.Fatal(err)
	}
	return userData
}

// provisionerUserData is the user data Karpenter renders for a Provisioner's node.
func provisionerUserData(t *testing.T) string {
	t.Helper()
	userData, err := amifamily.UserData(amifamily.NodeBootstrap{ClusterName: "demo", ClusterEndpoint: "https://demo.example.com", ClusterCABundle: []byte("ca"), ServiceCIDR: "10.100.0.0/16", MaxPods: 29})
	if err != nil {
		t.Fatal(err)
	}
	return userData
}

// volume maps an EBS volume of sizeGiB at device; 0 leaves the size to its snapshot.
func volume(device string, sizeGiB int32) ec2types.LaunchTemplateBlockDeviceMappingRequest {
	ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeType: ec2types.VolumeTypeGp3}
	if sizeGiB == 0 {
		ebs.SnapshotId = sdkaws.String("snap-0123456789abcdef0")
	} else {
		ebs.VolumeSize = sdkaws.Int32(sizeGiB)
	}
	return ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: sdkaws.String(device), Ebs: ebs}
}

// An instance's kubelet reports as ephemeral storage the filesystem it keeps its state on, as
// Karpenter's user data and volumes lay it out, and allocatable less EKS's 1Gi kube-reserved
// and the 10% nodefs.available eviction threshold.
func TestEC2InstancesReportTheirEphemeralStorage(t *testing.T) {
	for _, tt := range []struct {
		name                  string
		userData              string
		volumes               []ec2types.LaunchTemplateBlockDeviceMappingRequest
		instanceType          string
		capacity, allocatable string // "" when the kubelet reports no ephemeral storage
	}{
		{
			name: "AL2023: the root volume", userData: classUserData(t, awsv1.AMIFamilyAL2023, false),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 100)}, instanceType: "c5d.large",
			capacity: "100Gi", allocatable: "89Gi",
		},
		{
			name: "AL2023 RAID0: the NVMe instance store in GB", userData: classUserData(t, awsv1.AMIFamilyAL2023, true),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 20)}, instanceType: "c5d.large",
			// 50e9 − 2^30 − 5e9 bytes.
			capacity: "50G", allocatable: "43926258176",
		},
		{
			name: "AL2023 RAID0 on a type without instance store: the root volume", userData: classUserData(t, awsv1.AMIFamilyAL2023, true),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 20)}, instanceType: "c5.large",
			capacity: "20Gi", allocatable: "17Gi",
		},
		{
			name: "AL2023 RAID0 on a type whose instance store is not NVMe: the root volume", userData: classUserData(t, awsv1.AMIFamilyAL2023, true),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 20)}, instanceType: "h1.2xlarge",
			capacity: "20Gi", allocatable: "17Gi",
		},
		{
			name: "AL2023: a root volume sized by its snapshot is the AMI's 20 GiB", userData: classUserData(t, awsv1.AMIFamilyAL2023, false),
			volumes:      []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 0), volume("/dev/xvdb", 100)},
			instanceType: "c5.large", capacity: "20Gi", allocatable: "17Gi",
		},
		{
			name: "AL2: the root volume", userData: classUserData(t, awsv1.AMIFamilyAL2, false),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 40)}, instanceType: "m5d.large",
			capacity: "40Gi", allocatable: "35Gi",
		},
		{
			name: "AL2 RAID0: bootstrap.sh --local-disks raid0", userData: classUserData(t, awsv1.AMIFamilyAL2, true),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 20)}, instanceType: "m5d.large",
			// 75e9 − 2^30 − 7.5e9 bytes.
			capacity: "75G", allocatable: "66426258176",
		},
		{
			name: "Bottlerocket: the data volume, not the OS volume", userData: classUserData(t, awsv1.AMIFamilyBottlerocket, false),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 4), volume("/dev/xvdb", 60)}, instanceType: "c5d.large",
			capacity: "60Gi", allocatable: "53Gi",
		},
		{
			name: "Bottlerocket without a data volume mapped: the AMI's 20 GiB", userData: classUserData(t, awsv1.AMIFamilyBottlerocket, false),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 100)}, instanceType: "c5.large",
			capacity: "20Gi", allocatable: "17Gi",
		},
		{
			name: "Bottlerocket RAID0: apiclient ephemeral-storage init and bind", userData: classUserData(t, awsv1.AMIFamilyBottlerocket, true),
			volumes: []ec2types.LaunchTemplateBlockDeviceMappingRequest{volume("/dev/xvda", 4), volume("/dev/xvdb", 20)}, instanceType: "c5d.large",
			capacity: "50G", allocatable: "43926258176",
		},
		{
			name: "a template mapping no volume (a Provisioner's): none", userData: provisionerUserData(t), instanceType: "c5d.large",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, cfg := start(t, awsemulator.Options{}, launchSeed)
			client := ec2.NewFromConfig(cfg)
			ctx := context.Background()
			_, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
				LaunchTemplateName: sdkaws.String("nodes"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
					ImageId:             sdkaws.String("ami-0123456789abcdef0"),
					SecurityGroupIds:    []string{"sg-nodes"},
					UserData:            sdkaws.String(base64.StdEncoding.EncodeToString([]byte(tt.userData))),
					BlockDeviceMappings: tt.volumes,
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.CreateFleet(ctx, fleetInput("", "on-demand", 1, tt.instanceType)); err != nil {
				t.Fatal(err)
			}
			instance := e.EC2Instances()[0]
			capacity, reported := instance.Capacity["ephemeral-storage"]
			allocatable := instance.Allocatable["ephemeral-storage"]
			if tt.capacity == "" {
				if reported {
					t.Errorf("ephemeral storage %s (allocatable %s), want none", capacity, allocatable)
				}
				return
			}
			if capacity != tt.capacity || allocatable != tt.allocatable {
				t.Errorf("ephemeral storage %q, allocatable %q; want %q, %q", capacity, allocatable, tt.capacity, tt.allocatable)
			}
		})
	}
}
