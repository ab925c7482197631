package aws

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// capacityErrorCodes are CreateFleet's errors that say an offering has no capacity for this
// account now: the offering is not offered for a while and the launch tries the others.
var capacityErrorCodes = map[string]bool{
	"InsufficientInstanceCapacity": true,
	"InsufficientCapacity":         true,
	"MaxSpotInstanceCountExceeded": true,
	"VcpuLimitExceeded":            true,
	"UnfulfillableCapacity":        true,
	"InstanceLimitExceeded":        true,
	"Unsupported":                  true,
}

// maxOverrides bounds the overrides of one CreateFleet request, which EC2 limits: the cheapest
// candidates go first, the others only if none of those has capacity.
const maxOverrides = 60

// fleetCapacityTypes maps capacity types to CreateFleet's default target capacity types.
var fleetCapacityTypes = map[string]ec2types.DefaultTargetCapacityType{
	v1alpha5.CapacityTypeOnDemand: ec2types.DefaultTargetCapacityTypeOnDemand,
	v1alpha5.CapacityTypeSpot:     ec2types.DefaultTargetCapacityTypeSpot,
}

// Create launches request.Wanted() instances with CreateFleet (Type=instant), one request of
// that target capacity for all of them. The candidates of the first
// candidate's capacity type (up to maxOverrides) go in one request, one override per instance
// type and zone; when
// EC2 has no capacity for some, they are marked unavailable and the rest are tried at once, the
// other capacity type's last, so spot falls back to on-demand when the request allows it. When
// the candidates run out with fewer instances launched than wanted, those are returned.
func (i *Instances) Create(ctx context.Context, request cloudprovider.LaunchRequest) ([]*cloudprovider.Instance, error) {
	if len(request.Candidates) == 0 {
		return nil, fmt.Errorf("launching for provisioner %q, no candidate instance types", request.ProvisionerName)
	}
	block, err := i.block(ctx, request.Provider)
	if err != nil {
		return nil, err
	}
	subnets, err := i.resolveSubnets(ctx, block.SubnetSelector)
	if err != nil {
		return nil, err
	}
	zoneSubnets := subnetPerZone(subnets)
	capacityErr := &cloudprovider.InsufficientCapacityError{Reasons: map[cloudprovider.OfferingKey]string{}}
	var remaining []cloudprovider.Candidate
	var instances []*cloudprovider.Instance
	for _, c := range request.Candidates {
		key := c.Key()
		if reason, ok := i.unavailableReason(key); ok {
			capacityErr.Offerings = append(capacityErr.Offerings, key)
			capacityErr.Reasons[key] = reason
			continue
		}
		// The Provisioner's subnets changed since the scheduler listed its offerings.
		if _, ok := zoneSubnets[c.Offering.Zone]; !ok {
			capacityErr.Offerings = append(capacityErr.Offerings, key)
			continue
		}
		remaining = append(remaining, c)
	}
	for len(remaining) > 0 {
		capacityType := remaining[0].Offering.CapacityType
		var batch, rest []cloudprovider.Candidate
		for _, c := range remaining {
			if c.Offering.CapacityType == capacityType && len(batch) < maxOverrides {
				batch = append(batch, c)
			} else {
				rest = append(rest, c)
			}
		}
		launched, failed, err := i.launch(ctx, request, block, batch, zoneSubnets, capacityType, request.Wanted()-len(instances))
		instances = append(instances, launched...)
		if err != nil {
			if len(instances) > 0 {
				// What launched already has to reach the caller, or it would wait for garbage
				// collection without a Node.
				return instances, nil
			}
			return nil, err
		}
		// EC2 names the offerings it had no capacity for even when another one launched.
		for _, c := range batch {
			key := c.Key()
			reason, ok := failed[key]
			if !ok {
				rest = append(rest, c)
				continue
			}
			i.markUnavailable(key, reason)
			capacityErr.Offerings = append(capacityErr.Offerings, key)
			capacityErr.Reasons[key] = reason
		}
		if len(instances) == request.Wanted() {
			break
		}
		remaining = rest
	}
	if len(instances) == 0 {
		capacityErr.Err = errors.New("EC2 had no capacity for any of them")
		return nil, capacityErr
	}
	if len(capacityErr.Offerings) > 0 {
		for _, instance := range instances {
			instance.FellBackFrom = capacityErr
		}
	}
	return instances, nil
}

// launch sends one CreateFleet request of count instances for the batch, all of one capacity
// type. It returns the instances launched (maybe fewer than count) and the offerings EC2 had no
// capacity for with the reason, or an error.
func (i *Instances) launch(ctx context.Context, request cloudprovider.LaunchRequest, block *ProviderBlock, batch []cloudprovider.Candidate, zoneSubnets map[string]subnet, capacityType string, count int) ([]*cloudprovider.Instance, map[cloudprovider.OfferingKey]string, error) {
	configs, err := i.launchTemplateConfigs(ctx, request, block, batch, zoneSubnets)
	if err != nil {
		return nil, nil, err
	}
	input := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       sdkaws.Int32(int32(min(count, math.MaxInt32))), //nolint:gosec // G115: bounded by math.MaxInt32 first.
			DefaultTargetCapacityType: fleetCapacityTypes[capacityType],
		},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		SpotOptions:     &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		// An instant fleet tags only itself and its instances.
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: i.instanceTags(request.ProvisionerName, block.Tags)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: i.instanceTags(request.ProvisionerName, block.Tags)},
		},
		ClientToken: clientToken(request.IdempotencyKey, capacityType, count, configs),
	}
	c, err := i.clients()
	if err != nil {
		return nil, nil, err
	}
	out, err := c.ec2.CreateFleet(ctx, input)
	if err != nil {
		return nil, nil, callError(err, "ec2:CreateFleet", fmt.Sprintf("a %s instance for provisioner %s", capacityType, request.ProvisionerName))
	}
	zoneOfSubnet := map[string]string{}
	for zone, s := range zoneSubnets {
		zoneOfSubnet[s.id] = zone
	}
	failed, other := capacityFailures(out.Errors, batch, zoneOfSubnet)
	instances, err := i.describeAllLaunched(ctx, request, out.Instances)
	if len(instances) > 0 || err != nil {
		return instances, failed, err
	}
	if len(failed) == 0 {
		if len(other) == 0 {
			other = append(other, "no instance and no error")
		}
		return nil, nil, fmt.Errorf("calling ec2:CreateFleet for provisioner %s, %s", request.ProvisionerName, strings.Join(other, "; "))
	}
	return nil, failed, nil
}

// describeConcurrency bounds the DescribeInstances calls of one launch that run at once.
const describeConcurrency = 10

// describeAllLaunched reads the instances one CreateFleet launched, several at once. It returns
// those it could read, and the first error.
func (i *Instances) describeAllLaunched(ctx context.Context, request cloudprovider.LaunchRequest, launched []ec2types.CreateFleetInstance) ([]*cloudprovider.Instance, error) {
	var ids []string
	for _, l := range launched {
		ids = append(ids, l.InstanceIds...)
	}
	described := make([]*cloudprovider.Instance, len(ids))
	var group errgroup.Group
	group.SetLimit(describeConcurrency)
	for n, id := range ids {
		group.Go(func() error {
			instance, err := i.describeLaunched(ctx, id)
			if err != nil {
				return err
			}
			instance.Labels = launchedLabels(request, instance)
			described[n] = instance
			return nil
		})
	}
	err := group.Wait()
	return slices.DeleteFunc(described, func(instance *cloudprovider.Instance) bool { return instance == nil }), err
}

// capacityFailures maps CreateFleet's errors to the batch's offerings EC2 had no capacity for,
// with the error code; an error that names no override applies to all. The other errors are
// returned as text.
func capacityFailures(errs []ec2types.CreateFleetError, batch []cloudprovider.Candidate, zoneOfSubnet map[string]string) (map[cloudprovider.OfferingKey]string, []string) {
	failed := map[cloudprovider.OfferingKey]string{}
	var other []string
	for _, e := range errs {
		code := sdkaws.ToString(e.ErrorCode)
		if !capacityErrorCodes[code] {
			other = append(other, fmt.Sprintf("%s: %s", code, sdkaws.ToString(e.ErrorMessage)))
			continue
		}
		var overrides *ec2types.FleetLaunchTemplateOverrides
		if e.LaunchTemplateAndOverrides != nil {
			overrides = e.LaunchTemplateAndOverrides.Overrides
		}
		for _, c := range batch {
			if overrides == nil || (string(overrides.InstanceType) == c.InstanceType.Name &&
				cmp.Or(sdkaws.ToString(overrides.AvailabilityZone), zoneOfSubnet[sdkaws.ToString(overrides.SubnetId)]) == c.Offering.Zone) {
				failed[c.Key()] = code
			}
		}
	}
	return failed, other
}

// launchTemplateConfigs are the user's launch template, or Karpenter's for each architecture
// and max-pods figure of the batch, each with an override per candidate instance type and zone.
func (i *Instances) launchTemplateConfigs(ctx context.Context, request cloudprovider.LaunchRequest, block *ProviderBlock, batch []cloudprovider.Candidate, zoneSubnets map[string]subnet) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	byTemplate := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	for _, c := range batch {
		name := block.LaunchTemplate
		if name == "" {
			var err error
			if name, err = i.karpenterLaunchTemplate(ctx, request, block, c.InstanceType); err != nil {
				return nil, err
			}
		}
		byTemplate[name] = append(byTemplate[name], ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(c.InstanceType.Name),
			SubnetId:     sdkaws.String(zoneSubnets[c.Offering.Zone].id),
		})
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, name := range slices.Sorted(maps.Keys(byTemplate)) {
		version := "$Latest"
		if block.LaunchTemplate != "" {
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

// karpenterLaunchTemplate is the name of Karpenter's template for nodes of the instance type:
// its architecture picks the AMI and its pods capacity is the kubelet's maxPods, so types that
// share both share a template.
func (i *Instances) karpenterLaunchTemplate(ctx context.Context, request cloudprovider.LaunchRequest, block *ProviderBlock, instanceType *cloudprovider.InstanceType) (string, error) {
	ami, err := i.resolveAMI(ctx, instanceType.Labels[corev1.LabelArchStable])
	if err != nil {
		return "", err
	}
	securityGroups, err := i.resolveSecurityGroups(ctx, block.SecurityGroupSelector)
	if err != nil {
		return "", err
	}
	serviceCIDR, err := i.serviceCIDR(ctx)
	if err != nil {
		return "", err
	}
	data, err := userData(nodeBootstrap{
		ClusterName:     i.opts.ClusterName,
		ClusterEndpoint: i.opts.ClusterEndpoint,
		ClusterCABundle: i.opts.ClusterCABundle,
		ServiceCIDR:     serviceCIDR,
		Labels:          nodeLabels(request),
		Taints:          request.Taints,
		MaxPods:         instanceType.Capacity.Pods().Value(),
	})
	if err != nil {
		return "", err
	}
	return i.ensureLaunchTemplate(ctx, launchTemplateInputs{
		AMI:             ami,
		SecurityGroups:  securityGroups,
		InstanceProfile: block.InstanceProfile,
		UserData:        data,
	})
}

// nodeLabels are the labels the node registers with: the request's and the Provisioner's name.
func nodeLabels(request cloudprovider.LaunchRequest) map[string]string {
	labels := maps.Clone(request.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha5.ProvisionerNameLabelKey] = request.ProvisionerName
	return labels
}

// instanceTags are every instance's: a Name, the Provisioner, the cluster's ownership, then the
// block's own (validated not to override the others).
func (i *Instances) instanceTags(provisionerName string, extra map[string]string) []ec2types.Tag {
	tags := map[string]string{
		"Name":                            fmt.Sprintf("karpenter.sh/%s/%s", i.opts.ClusterName, provisionerName),
		v1alpha5.ProvisionerNameLabelKey:  provisionerName,
		clusterTagKey(i.opts.ClusterName): "owned",
	}
	for key, value := range extra {
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

// clientToken makes CreateFleet idempotent for a launch retried with the same key and the same
// overrides: EC2 answers with the first request's instances instead of launching again. Without
// a key the SDK draws a token per call, which its own retries reuse.
func clientToken(idempotencyKey, capacityType string, count int, configs []ec2types.FleetLaunchTemplateConfigRequest) *string {
	if idempotencyKey == "" {
		return nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d\n", idempotencyKey, capacityType, count)
	for _, config := range configs {
		fmt.Fprintf(h, "%s\n", sdkaws.ToString(config.LaunchTemplateSpecification.LaunchTemplateName))
		for _, o := range config.Overrides {
			fmt.Fprintf(h, "%s %s\n", o.InstanceType, sdkaws.ToString(o.SubnetId))
		}
	}
	// EC2 takes up to 64 characters.
	return sdkaws.String(hex.EncodeToString(h.Sum(nil)))
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
