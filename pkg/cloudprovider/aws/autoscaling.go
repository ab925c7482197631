package aws

import (
	"context"
	"fmt"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// AutoScalingGroup builds the NodeGroup for an Auto Scaling group name or ARN.
func (p *Provider) AutoScalingGroup(id string) (cloudprovider.NodeGroup, error) {
	parsed, err := ParseAutoScalingGroupID(id)
	if err != nil {
		return nil, err
	}
	c, err := p.clientsFor(parsed.Region)
	if err != nil {
		return nil, err
	}
	return &autoScalingGroup{client: c.AutoScaling, region: p.regionOf(parsed.Region), name: parsed.Name}, nil
}

type autoScalingGroup struct {
	client       *autoscaling.Client
	region, name string
}

// ID is region and name: calls address a group by name in the controller's own account,
// so an ARN's account and uuid do not change which group is driven.
func (g *autoScalingGroup) ID() string { return g.region + "/" + g.name }

func (g *autoScalingGroup) resource() string { return "auto scaling group " + g.name }

func (g *autoScalingGroup) describe(ctx context.Context) (types.AutoScalingGroup, error) {
	out, err := g.client.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{g.name}})
	if err != nil {
		return types.AutoScalingGroup{}, awsapi.CallError(err, "autoscaling:DescribeAutoScalingGroups", g.resource())
	}
	for _, group := range out.AutoScalingGroups {
		if sdkaws.ToString(group.AutoScalingGroupName) == g.name {
			return group, nil
		}
	}
	return types.AutoScalingGroup{}, &cloudprovider.NotFoundError{Resource: g.resource(), Err: fmt.Errorf("DescribeAutoScalingGroups returned no such group")}
}

func (g *autoScalingGroup) Status(ctx context.Context) (cloudprovider.NodeGroupStatus, error) {
	group, err := g.describe(ctx)
	if err != nil {
		return cloudprovider.NodeGroupStatus{}, err
	}
	desired := sdkaws.ToInt32(group.DesiredCapacity)
	counts := countInstances(group.Instances)
	return cloudprovider.NodeGroupStatus{
		DesiredReplicas:  desired,
		Replicas:         counts.inService,
		MinReplicas:      sdkaws.ToInt32(group.MinSize),
		MaxReplicas:      sdkaws.ToInt32(group.MaxSize),
		Stable:           counts.settled(desired),
		Message:          counts.describe(desired),
		NodeLabels:       nodeTemplateLabels(group.Tags),
		GrantedNamespace: grantedNamespace(group.Tags),
	}, nil
}

func (g *autoScalingGroup) SetDesiredReplicas(ctx context.Context, replicas int32) error {
	group, err := g.describe(ctx)
	if err != nil {
		return err
	}
	lo, hi := sdkaws.ToInt32(group.MinSize), sdkaws.ToInt32(group.MaxSize)
	if replicas < lo || replicas > hi {
		return &cloudprovider.OutOfBoundsError{Resource: g.resource(), Requested: replicas, Min: lo, Max: hi}
	}
	_, err = g.client.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{
		AutoScalingGroupName: sdkaws.String(g.name),
		DesiredCapacity:      sdkaws.Int32(replicas),
		// The autoscaler already rate-limits itself; cooldowns are for simple scaling policies.
		HonorCooldown: sdkaws.Bool(false),
	})
	if err == nil {
		return nil
	}
	if code := awsapi.ErrorCode(err); code == "ResourceContention" || code == "ScalingActivityInProgress" {
		return &cloudprovider.BusyError{Resource: g.resource(), Reason: fmt.Sprintf("SetDesiredCapacity refused with %s", code)}
	}
	return awsapi.CallError(err, "autoscaling:SetDesiredCapacity", g.resource())
}

// instanceCounts tallies Auto Scaling lifecycle states.
type instanceCounts struct {
	inService, pending, terminating, other int32
}

func countInstances(instances []types.Instance) instanceCounts {
	var c instanceCounts
	for _, i := range instances {
		state := string(i.LifecycleState)
		switch {
		case i.LifecycleState == types.LifecycleStateInService:
			c.inService++
		case strings.HasPrefix(state, "Pending"):
			c.pending++
		case strings.HasPrefix(state, "Terminat"): // Terminating, Terminating:Wait|Proceed, Terminated
			c.terminating++
		default: // Standby, Detaching, ...: not serving, not converging on their own
			c.other++
		}
	}
	return c
}

func (c instanceCounts) add(o instanceCounts) instanceCounts {
	return instanceCounts{c.inService + o.inService, c.pending + o.pending, c.terminating + o.terminating, c.other + o.other}
}

func (c instanceCounts) settled(desired int32) bool {
	return c.pending == 0 && c.terminating == 0 && c.inService == desired
}

// describe says what is in flight, "" when settled.
func (c instanceCounts) describe(desired int32) string {
	if c.settled(desired) {
		return ""
	}
	parts := []string{fmt.Sprintf("%d of %d desired instances in service", c.inService, desired)}
	if c.pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending", c.pending))
	}
	if c.terminating > 0 {
		parts = append(parts, fmt.Sprintf("%d terminating", c.terminating))
	}
	if c.other > 0 {
		parts = append(parts, fmt.Sprintf("%d in standby or detaching", c.other))
	}
	return strings.Join(parts, ", ")
}

// nodeTemplateLabelPrefix marks Auto Scaling group tags that declare the labels of the
// group's nodes, the convention cluster-autoscaler established for scaling from zero.
const nodeTemplateLabelPrefix = "k8s.io/cluster-autoscaler/node-template/label/"

func nodeTemplateLabels(tags []types.TagDescription) map[string]string {
	labels := map[string]string{}
	for _, tag := range tags {
		if key, ok := strings.CutPrefix(sdkaws.ToString(tag.Key), nodeTemplateLabelPrefix); ok && key != "" {
			labels[key] = sdkaws.ToString(tag.Value)
		}
	}
	return labels
}

func grantedNamespace(tags []types.TagDescription) string {
	for _, tag := range tags {
		if sdkaws.ToString(tag.Key) == cloudprovider.NamespaceTag {
			return sdkaws.ToString(tag.Value)
		}
	}
	return ""
}
