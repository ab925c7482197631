package launchtemplate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// inputs are what a launch template Karpenter makes holds; equal inputs share a
// template.
type inputs struct {
	AMI             string   `json:"ami"`
	SecurityGroups  []string `json:"securityGroups"`
	InstanceProfile string   `json:"instanceProfile"`
	UserData        string   `json:"userData"`
	// The others are an EC2NodeClass's; left out of a Provisioner's, so that its templates keep
	// their names. MetadataOptions nil are a Provisioner's: IMDSv2 only, two hops.
	BlockDeviceMappings      []*awsv1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	MetadataOptions          *awsv1.MetadataOptions      `json:"metadataOptions,omitempty"`
	DetailedMonitoring       bool                        `json:"detailedMonitoring,omitempty"`
	AssociatePublicIPAddress *bool                       `json:"associatePublicIPAddress,omitempty"`
	// Tags are the template's and, through it, its nodes' volumes' and network interfaces'.
	Tags map[string]string `json:"tags,omitempty"`
}

// name is the template's name, a hash of the cluster's name and the inputs: it is found again
// by name after a restart and never reused for other inputs, and stays within the 128
// characters EC2 allows whatever the cluster is called.
func (in inputs) name(clusterName string) string {
	sum := sha256.Sum256(append([]byte(clusterName+"\n"), mustJSON(in)...))
	return "karpenter.sh/" + hex.EncodeToString(sum[:])
}

// ensure returns the name of the template holding the inputs, creating it when EC2 has none of
// that name.
func (p *Provider) ensure(ctx context.Context, in inputs) (string, error) {
	name := in.name(p.opts.ClusterName)
	if _, ok := p.cache.Get(name); ok {
		return name, nil
	}
	c, err := p.clients()
	if err != nil {
		return "", err
	}
	_, err = c.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch {
	case err == nil:
	case awsapi.ErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException":
		if err := p.create(ctx, c.EC2, name, in); err != nil {
			return "", err
		}
	default:
		return "", awsapi.CallError(err, "ec2:DescribeLaunchTemplates", "launch template "+name)
	}
	p.cache.Add(name, struct{}{}, cacheTTL)
	return name, nil
}

func (p *Provider) create(ctx context.Context, client *ec2.Client, name string, in inputs) error {
	_, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String(name),
		LaunchTemplateData: p.templateData(in),
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: p.templateTags(in)}},
	})
	// Another replica or an earlier attempt made it: the name says the contents are the same.
	if err != nil && awsapi.ErrorCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		return awsapi.CallError(err, "ec2:CreateLaunchTemplate", "launch template "+name)
	}
	return nil
}

// templateData is what the template holds.
func (p *Provider) templateData(in inputs) *ec2types.RequestLaunchTemplateData {
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            sdkaws.String(in.AMI),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String(in.InstanceProfile)},
		SecurityGroupIds:   in.SecurityGroups,
		UserData:           sdkaws.String(base64.StdEncoding.EncodeToString([]byte(in.UserData))),
		// IMDSv2 only: a pod that reaches the metadata service cannot read the node's
		// credentials with a plain GET.
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
			HttpPutResponseHopLimit: sdkaws.Int32(2),
		},
		BlockDeviceMappings: blockDeviceMappings(in.BlockDeviceMappings),
	}
	if in.MetadataOptions != nil {
		data.MetadataOptions = instanceMetadataOptions(in.MetadataOptions)
	}
	if in.DetailedMonitoring {
		data.Monitoring = &ec2types.LaunchTemplatesMonitoringRequest{Enabled: sdkaws.Bool(true)}
	}
	if in.AssociatePublicIPAddress != nil {
		// EC2 takes the public address only on an interface, and then the groups there too.
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: sdkaws.Int32(0), AssociatePublicIpAddress: in.AssociatePublicIPAddress, Groups: in.SecurityGroups, DeleteOnTermination: sdkaws.Bool(true),
		}}
		data.SecurityGroupIds = nil
	}
	if len(in.Tags) > 0 {
		tags := awsTags(in.Tags)
		data.TagSpecifications = []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags},
		}
	}
	return data
}

// templateTags are the template's own: the cluster's ownership, and a class's tags.
func (p *Provider) templateTags(in inputs) []ec2types.Tag {
	if len(in.Tags) > 0 {
		return awsTags(in.Tags)
	}
	return []ec2types.Tag{{Key: sdkaws.String(awsapi.ClusterTagKey(p.opts.ClusterName)), Value: sdkaws.String("owned")}}
}

// awsTags are the tags sorted by key, so that equal tags send equal requests.
func awsTags(tags map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: sdkaws.String(key), Value: sdkaws.String(tags[key])})
	}
	return out
}

// mustJSON encodes values that always encode (plain structs of strings and slices).
func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding %T, %v", v, err))
	}
	return raw
}
