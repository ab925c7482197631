package launchtemplate

import (
	"context"
	"fmt"
	"maps"

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

// defaultBlockDeviceMappings are a family's volumes when the class names none; nil leaves the
// AMI's (Custom).
func defaultBlockDeviceMappings(family string) []*awsv1.BlockDeviceMapping {
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023:
		return []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &defaultEBS}}
	case awsv1.AMIFamilyBottlerocket:
		// Bottlerocket's OS volume is small; the second holds the kubelet's and containers' data.
		os := defaultEBS
		os.VolumeSize = ptr.To(resource.MustParse("4Gi"))
		return []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &os}, {DeviceName: ptr.To("/dev/xvdb"), EBS: &defaultEBS}}
	}
	return nil
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
