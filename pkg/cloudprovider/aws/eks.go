package aws

import (
	"context"
	"fmt"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// EKSNodeGroup builds the NodeGroup for an EKS managed node group ARN or <cluster>/<nodegroup>.
func (p *Provider) EKSNodeGroup(id string) (cloudprovider.NodeGroup, error) {
	parsed, err := ParseEKSNodeGroupID(id)
	if err != nil {
		return nil, err
	}
	c, err := p.clientsFor(parsed.Region)
	if err != nil {
		return nil, err
	}
	return &eksNodeGroup{eks: c.EKS, autoScaling: c.AutoScaling, region: p.regionOf(parsed.Region), cluster: parsed.Cluster, name: parsed.NodeGroup}, nil
}

// eksNodeGroup sizes through EKS and counts serving instances in the Auto
// Scaling groups EKS manages for it, since EKS itself does not report them.
type eksNodeGroup struct {
	eks                   *eks.Client
	autoScaling           *autoscaling.Client
	region, cluster, name string
}

func (g *eksNodeGroup) ID() string { return g.region + "/" + g.cluster + "/" + g.name }

func (g *eksNodeGroup) resource() string {
	return fmt.Sprintf("eks node group %s/%s", g.cluster, g.name)
}

func (g *eksNodeGroup) describe(ctx context.Context) (*ekstypes.Nodegroup, error) {
	out, err := g.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: sdkaws.String(g.cluster), NodegroupName: sdkaws.String(g.name)})
	if err != nil {
		return nil, awsapi.CallError(err, "eks:DescribeNodegroup", g.resource(), "ResourceNotFoundException")
	}
	if out.Nodegroup == nil || out.Nodegroup.ScalingConfig == nil {
		return nil, fmt.Errorf("calling eks:DescribeNodegroup on %s, response has no scaling configuration", g.resource())
	}
	return out.Nodegroup, nil
}

func (g *eksNodeGroup) Status(ctx context.Context) (cloudprovider.NodeGroupStatus, error) {
	ng, err := g.describe(ctx)
	if err != nil {
		return cloudprovider.NodeGroupStatus{}, err
	}
	sc := ng.ScalingConfig
	st := cloudprovider.NodeGroupStatus{
		DesiredReplicas: sdkaws.ToInt32(sc.DesiredSize),
		MinReplicas:     sdkaws.ToInt32(sc.MinSize),
		MaxReplicas:     sdkaws.ToInt32(sc.MaxSize),
		NodeLabels:      map[string]string{eksNodeGroupLabel: sdkaws.ToString(ng.NodegroupName)},
		// A managed node group's own tags, not its Auto Scaling group's: EKS owns those.
		GrantedNamespace: ng.Tags[cloudprovider.NamespaceTag],
	}
	for key, value := range ng.Labels {
		st.NodeLabels[key] = value
	}
	var groupNames []string
	if ng.Resources != nil {
		for _, asg := range ng.Resources.AutoScalingGroups {
			groupNames = append(groupNames, sdkaws.ToString(asg.Name))
		}
	}
	var counts instanceCounts
	if len(groupNames) > 0 {
		out, err := g.autoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: groupNames})
		if err != nil {
			return cloudprovider.NodeGroupStatus{}, awsapi.CallError(err, "autoscaling:DescribeAutoScalingGroups", g.resource())
		}
		for _, asg := range out.AutoScalingGroups {
			counts = counts.add(countInstances(asg.Instances))
		}
	}
	st.Replicas = counts.inService
	switch ng.Status {
	case ekstypes.NodegroupStatusActive, ekstypes.NodegroupStatusDegraded:
		st.Stable = counts.settled(st.DesiredReplicas)
		st.Message = counts.describe(st.DesiredReplicas)
		if ng.Status == ekstypes.NodegroupStatusDegraded {
			st.Stable, st.Message = false, joinNonEmpty("node group is DEGRADED: "+healthIssues(ng.Health), st.Message)
		}
	default: // UPDATING, CREATING, DELETING, *_FAILED: EKS is not done with the group.
		st.Message = joinNonEmpty(fmt.Sprintf("node group is %s", ng.Status), counts.describe(st.DesiredReplicas))
	}
	return st, nil
}

func (g *eksNodeGroup) SetDesiredReplicas(ctx context.Context, replicas int32) error {
	ng, err := g.describe(ctx)
	if err != nil {
		return err
	}
	if ng.Status != ekstypes.NodegroupStatusActive && ng.Status != ekstypes.NodegroupStatusDegraded {
		return &cloudprovider.BusyError{Resource: g.resource(), Reason: fmt.Sprintf("node group is %s", ng.Status)}
	}
	lo, hi := sdkaws.ToInt32(ng.ScalingConfig.MinSize), sdkaws.ToInt32(ng.ScalingConfig.MaxSize)
	if replicas < lo || replicas > hi {
		return &cloudprovider.OutOfBoundsError{Resource: g.resource(), Requested: replicas, Min: lo, Max: hi}
	}
	_, err = g.eks.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{
		ClusterName:   sdkaws.String(g.cluster),
		NodegroupName: sdkaws.String(g.name),
		ScalingConfig: &ekstypes.NodegroupScalingConfig{DesiredSize: sdkaws.Int32(replicas)},
	})
	if err == nil {
		return nil
	}
	if awsapi.ErrorCode(err) == "ResourceInUseException" {
		return &cloudprovider.BusyError{Resource: g.resource(), Reason: "another update is in progress"}
	}
	return awsapi.CallError(err, "eks:UpdateNodegroupConfig", g.resource(), "ResourceNotFoundException")
}

func healthIssues(h *ekstypes.NodegroupHealth) string {
	if h == nil || len(h.Issues) == 0 {
		return "no issue reported"
	}
	var issues []string
	for _, i := range h.Issues {
		issues = append(issues, fmt.Sprintf("%s: %s", i.Code, sdkaws.ToString(i.Message)))
	}
	return strings.Join(issues, "; ")
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// eksNodeGroupLabel is the label EKS puts on every node of a managed node group.
const eksNodeGroupLabel = "eks.amazonaws.com/nodegroup"
