package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// launchTemplateConfigs are the user's launch template, or Karpenter's for each architecture
// and max-pods figure of the batch, each with an override per candidate instance type and zone.
// The overrides keep the batch's ranking, as their priorities and in their order: the template
// of the first candidate first, each template's candidates in rank order.
func (p *Provider) launchTemplateConfigs(ctx context.Context, request cloudprovider.LaunchRequest, nodeClass NodeClass, batch []cloudprovider.Candidate, zoneSubnets map[string]subnet.Subnet) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	byTemplate := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	var templates []string
	for rank, c := range batch {
		name := nodeClass.LaunchTemplate
		if name == "" {
			var err error
			if name, err = p.launchTemplates.Resolve(ctx, launchtemplate.Request{
				SecurityGroups:  nodeClass.SecurityGroups,
				InstanceProfile: nodeClass.InstanceProfile,
				Labels:          nodeLabels(request),
				Taints:          request.Taints,
				InstanceType:    c.InstanceType,
				NodeClass:       nodeClass.EC2NodeClass,
			}); err != nil {
				return nil, err
			}
		}
		if _, ok := byTemplate[name]; !ok {
			templates = append(templates, name)
		}
		byTemplate[name] = append(byTemplate[name], ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(c.InstanceType.Name),
			SubnetId:     sdkaws.String(zoneSubnets[c.Offering.Zone].ID),
			// EC2 launches the lowest number first.
			Priority: sdkaws.Float64(float64(rank)),
		})
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, name := range templates {
		version := "$Latest"
		if nodeClass.LaunchTemplate != "" {
			// A user's template launches as its owner made it the default.
			version = "$Default"
		}
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: sdkaws.String(name), Version: sdkaws.String(version)},
			Overrides:                   byTemplate[name],
		})
	}
	return configs, nil
}

// nodeLabels are the labels the node registers with: the request's and the Provisioner's or
// NodePool's name.
func nodeLabels(request cloudprovider.LaunchRequest) map[string]string {
	labels := maps.Clone(request.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if request.NodePoolName != "" {
		labels[v1.NodePoolLabelKey] = request.NodePoolName
	} else {
		labels[v1alpha5.ProvisionerNameLabelKey] = request.ProvisionerName
	}
	return labels
}

// launchedFor names what the launch is for in errors: "provisioner <name>" or "nodepool <name>".
func launchedFor(request cloudprovider.LaunchRequest) string {
	if request.NodePoolName != "" {
		return "nodepool " + request.NodePoolName
	}
	return "provisioner " + request.ProvisionerName
}

// instanceTags are every instance's: for a Provisioner a Name and the Provisioner, for a NodePool
// the NodePool, its EC2NodeClass and the cluster's name as EKS tags it; the cluster's ownership,
// the key of the launch that made it (by which a launch resumed after a crash finds its
// instances), then the node class's own (which may not override the others).
func (p *Provider) instanceTags(request cloudprovider.LaunchRequest, nodeClass NodeClass) []ec2types.Tag {
	tags := map[string]string{awsapi.ClusterTagKey(p.clusterName): "owned"}
	if nodeClass.EC2NodeClass != nil {
		tags[v1.NodePoolLabelKey] = request.NodePoolName
		tags[awsv1.LabelNodeClass] = nodeClass.EC2NodeClass.Name
		tags[launchtemplate.EKSClusterNameTagKey] = p.clusterName
	} else {
		tags["Name"] = fmt.Sprintf("karpenter.sh/%s/%s", p.clusterName, request.ProvisionerName)
		tags[v1alpha5.ProvisionerNameLabelKey] = request.ProvisionerName
	}
	if request.IdempotencyKey != "" {
		tags[LaunchGroupTagKey] = request.IdempotencyKey
	}
	for key, value := range nodeClass.Tags {
		if _, ok := tags[key]; !ok {
			tags[key] = value
		}
	}
	var out []ec2types.Tag
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: sdkaws.String(key), Value: sdkaws.String(tags[key])})
	}
	return out
}

// LaunchGroupTagKey tags an instance with the key of the launch that made it.
const LaunchGroupTagKey = "karpenter.sh/launch-group"

// clientToken makes a launch's call-th CreateFleet call idempotent: the same launch asked again
// (after a crash or a lost answer) makes the same calls under the same tokens, and EC2 answers
// each with the first request's instances instead of launching again, or refuses it when its
// parameters changed since (IdempotentParameterMismatch), never launching twice. Without a key the
// SDK draws a token per call, which its own retries reuse.
func clientToken(idempotencyKey string, call int) *string {
	if idempotencyKey == "" {
		return nil
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\n%d", idempotencyKey, call))
	// EC2 takes up to 64 characters.
	return sdkaws.String(hex.EncodeToString(sum[:]))
}

// launchedLabels are those the node will carry.
func launchedLabels(request cloudprovider.LaunchRequest, instance *cloudprovider.Instance) map[string]string {
	labels := nodeLabels(request)
	for _, c := range request.Candidates {
		if c.InstanceType.Name == instance.InstanceType {
			maps.Copy(labels, c.InstanceType.Labels)
			break
		}
	}
	maps.Copy(labels, map[string]string{
		corev1.LabelInstanceTypeStable: instance.InstanceType,
		corev1.LabelTopologyZone:       instance.Zone,
		v1alpha5.CapacityTypeLabelKey:  instance.CapacityType,
	})
	return labels
}
