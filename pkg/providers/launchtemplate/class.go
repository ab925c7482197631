package launchtemplate

import (
	"context"
	"fmt"
	"maps"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// EKSClusterNameTagKey names the cluster on what Karpenter launches for a NodePool, as EKS tags
// its own nodes.
const EKSClusterNameTagKey = "eks:eks-cluster-name"

// defaultEBS is the root volume of AL2, AL2023 and Bottlerocket nodes whose class names none:
// 20 GiB of encrypted gp3, as upstream Karpenter's default.
var defaultEBS = awsv1.BlockDevice{Encrypted: ptr.To(true), VolumeType: ptr.To(string(ec2types.VolumeTypeGp3)), VolumeSize: ptr.To(resource.MustParse("20Gi"))}

// The devices of the families' volumes: the root volume, and Bottlerocket's data volume.
const (
	rootDevice             = "/dev/xvda"
	bottlerocketDataDevice = "/dev/xvdb"
)

// defaultBlockDeviceMappings are a family's volumes when the class names none; nil leaves the
// AMI's (Custom).
func defaultBlockDeviceMappings(family string) []*awsv1.BlockDeviceMapping {
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023:
		return []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To(rootDevice), EBS: &defaultEBS}}
	case awsv1.AMIFamilyBottlerocket:
		// Bottlerocket's OS volume is small; the second holds the kubelet's and containers' data.
		os := defaultEBS
		os.VolumeSize = ptr.To(resource.MustParse("4Gi"))
		return []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To(rootDevice), EBS: &os}, {DeviceName: ptr.To(bottlerocketDataDevice), EBS: &defaultEBS}}
	}
	return nil
}

// EphemeralVolumeSize is the size of the EBS volume a class's nodes keep the kubelet's and
// container runtime's state on, their ephemeral storage, as upstream sizes it: the class's
// rootVolume; else its volume on the device the family keeps that state on (AL2 and AL2023 the
// root device, Bottlerocket its data volume), or for Custom, whose AMI may keep it anywhere,
// its last volume; else the family's default volume, 20 GiB, also for the volumes of a Custom
// AMI, whose sizes Karpenter does not read. A volume sized by its snapshot alone tells no size
// and is passed over.
func EphemeralVolumeSize(class *awsv1.EC2NodeClass) resource.Quantity {
	devices := class.Spec.BlockDeviceMappings
	for _, d := range devices {
		if size, ok := volumeSize(d); ok && d.RootVolume {
			return size
		}
	}
	family := amifamily.Family(class)
	if family == awsv1.AMIFamilyCustom {
		if size, ok := volumeSize(lastOf(devices)); ok {
			return size
		}
		return *defaultEBS.VolumeSize
	}
	device := rootDevice
	if family == awsv1.AMIFamilyBottlerocket {
		device = bottlerocketDataDevice
	}
	for _, d := range slices.Concat(devices, defaultBlockDeviceMappings(family)) {
		if size, ok := volumeSize(d); ok && ptr.Deref(d.DeviceName, "") == device {
			return size
		}
	}
	return *defaultEBS.VolumeSize
}

// volumeSize is the size the class sets for an EBS volume; false when it sets none.
func volumeSize(d *awsv1.BlockDeviceMapping) (resource.Quantity, bool) {
	if d == nil || d.EBS == nil || d.EBS.VolumeSize == nil {
		return resource.Quantity{}, false
	}
	return *d.EBS.VolumeSize, true
}

// lastOf is the last of the devices, nil when there is none.
func lastOf(devices []*awsv1.BlockDeviceMapping) *awsv1.BlockDeviceMapping {
	if len(devices) == 0 {
		return nil
	}
	return devices[len(devices)-1]
}

// metadataOptions are the class's instance metadata options, defaulted as the schema defaults
// them (a class made before its webhook ran may lack them): IMDSv2 only, one hop.
func metadataOptions(class *awsv1.EC2NodeClass) *awsv1.MetadataOptions {
	options := awsv1.MetadataOptions{
		HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"), HTTPPutResponseHopLimit: ptr.To[int64](1), HTTPTokens: ptr.To("required"),
	}
	if set := class.Spec.MetadataOptions; set != nil {
		options.HTTPEndpoint = firstSet(set.HTTPEndpoint, options.HTTPEndpoint)
		options.HTTPProtocolIPv6 = firstSet(set.HTTPProtocolIPv6, options.HTTPProtocolIPv6)
		options.HTTPPutResponseHopLimit = firstSet(set.HTTPPutResponseHopLimit, options.HTTPPutResponseHopLimit)
		options.HTTPTokens = firstSet(set.HTTPTokens, options.HTTPTokens)
	}
	return &options
}

// firstSet is the first pointer that is not nil.
func firstSet[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// ClassAMIs are the AMIs of a class's status with their requirements, in the status's order
// (the newest first).
type ClassAMIs []classAMI

type classAMI struct {
	id           string
	requirements scheduling.Requirements
}

// AMIsOf reads the AMIs of the class's status.
func AMIsOf(class *awsv1.EC2NodeClass) (ClassAMIs, error) {
	var out ClassAMIs
	for _, ami := range class.Status.AMIs {
		requirements := scheduling.Requirements{}
		for _, r := range ami.Requirements {
			if err := requirements.Add(r.Key, r.Operator, r.Values...); err != nil {
				return nil, fmt.Errorf("requirements of AMI %s in the status of EC2NodeClass %s, %w", ami.ID, class.Name, err)
			}
		}
		out = append(out, classAMI{id: ami.ID, requirements: requirements})
	}
	return out, nil
}

// For is the AMI that boots the instance type: the first whose requirements its labels meet;
// false when none does.
func (amis ClassAMIs) For(instanceType *cloudprovider.InstanceType) (string, bool) {
	for _, ami := range amis {
		if ami.requirements.MatchesLabels(instanceType.Labels) {
			return ami.id, true
		}
	}
	return "", false
}

// resolveClass returns the name of the template of the request's nodes from its EC2NodeClass's
// status and spec, making it when EC2 has none of that name.
func (p *Provider) resolveClass(ctx context.Context, request Request) (string, error) {
	class := request.NodeClass
	amis, err := AMIsOf(class)
	if err != nil {
		return "", err
	}
	ami, ok := amis.For(request.InstanceType)
	if !ok {
		return "", &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonInvalidAMI,
			Err: fmt.Errorf("no AMI of EC2NodeClass %s boots instance type %s", class.Name, request.InstanceType.Name)}
	}
	family := amifamily.Family(class)
	bootstrap := amifamily.NodeBootstrap{
		ClusterName:     p.opts.ClusterName,
		ClusterEndpoint: p.opts.ClusterEndpoint,
		ClusterCABundle: p.opts.ClusterCABundle,
		Labels:          request.Labels,
		Taints:          request.Taints,
		MaxPods:         request.InstanceType.Capacity.Pods().Value(),
		Kubelet:         class.Spec.Kubelet,
		// With RAID0 the instance type's ephemeral storage is its instance-store disks, which
		// the user data must make one array of.
		InstanceStorePolicy: class.Spec.InstanceStorePolicy,
		AMIName:             amiName(class, ami),
	}
	if class.Spec.Kubelet != nil && class.Spec.Kubelet.MaxPods != nil {
		bootstrap.MaxPods = int64(*class.Spec.Kubelet.MaxPods)
	}
	// Only nodeadm needs the service CIDR: bootstrap.sh and Bottlerocket find the cluster DNS.
	if family == awsv1.AMIFamilyAL2023 {
		if bootstrap.ServiceCIDR, err = p.serviceCIDR(ctx); err != nil {
			return "", err
		}
	}
	data, err := amifamily.ClassUserData(family, bootstrap, ptr.Deref(class.Spec.UserData, ""))
	if err != nil {
		return "", err
	}
	var securityGroups []string
	for _, group := range class.Status.SecurityGroups {
		securityGroups = append(securityGroups, group.ID)
	}
	devices := class.Spec.BlockDeviceMappings
	if len(devices) == 0 {
		devices = defaultBlockDeviceMappings(family)
	}
	tags := maps.Clone(class.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, map[string]string{
		awsapi.ClusterTagKey(p.opts.ClusterName): "owned",
		EKSClusterNameTagKey:                     p.opts.ClusterName,
		awsv1.LabelNodeClass:                     class.Name,
	})
	return p.ensure(ctx, inputs{
		AMI:                      ami,
		SecurityGroups:           securityGroups,
		InstanceProfile:          request.InstanceProfile,
		UserData:                 data,
		BlockDeviceMappings:      devices,
		MetadataOptions:          metadataOptions(class),
		DetailedMonitoring:       ptr.Deref(class.Spec.DetailedMonitoring, false),
		AssociatePublicIPAddress: class.Spec.AssociatePublicIPAddress,
		Tags:                     tags,
	})
}

// amiName is the name the class's status gives the AMI, "" when it gives none.
func amiName(class *awsv1.EC2NodeClass, id string) string {
	for _, ami := range class.Status.AMIs {
		if ami.ID == id {
			return ami.Name
		}
	}
	return ""
}

// blockDeviceMappings are the class's volumes as EC2 takes them; sizes in GiB, rounded up.
func blockDeviceMappings(devices []*awsv1.BlockDeviceMapping) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, d := range devices {
		mapping := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: d.DeviceName}
		if ebs := d.EBS; ebs != nil {
			mapping.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination:      ebs.DeleteOnTermination,
				Encrypted:                ebs.Encrypted,
				Iops:                     int32Of(ebs.IOPS),
				KmsKeyId:                 ebs.KMSKeyID,
				SnapshotId:               ebs.SnapshotID,
				Throughput:               int32Of(ebs.Throughput),
				VolumeInitializationRate: ebs.VolumeInitializationRate,
			}
			if ebs.VolumeType != nil {
				mapping.Ebs.VolumeType = ec2types.VolumeType(*ebs.VolumeType)
			}
			if ebs.VolumeSize != nil {
				const gibibyte = 1 << 30
				mapping.Ebs.VolumeSize = sdkaws.Int32(int32((ebs.VolumeSize.Value() + gibibyte - 1) / gibibyte)) //nolint:gosec // G115: the schema bounds sizes to 64 TiB.
			}
		}
		out = append(out, mapping)
	}
	return out
}

// int32Of narrows the schema's bounded figures (IOPS, throughput) to EC2's type.
func int32Of(v *int64) *int32 {
	if v == nil {
		return nil
	}
	return sdkaws.Int32(int32(*v)) //nolint:gosec // G115: the schema bounds IOPS and throughput far below 2^31.
}

// instanceMetadataOptions are the class's metadata options as EC2 takes them.
func instanceMetadataOptions(o *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	return &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(ptr.Deref(o.HTTPEndpoint, "")),
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(ptr.Deref(o.HTTPProtocolIPv6, "")),
		HttpPutResponseHopLimit: int32Of(o.HTTPPutResponseHopLimit),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensState(ptr.Deref(o.HTTPTokens, "")),
	}
}
