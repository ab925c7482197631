package instance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/errgroup"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// maxOverrides bounds the overrides of one CreateFleet request, which EC2 limits: the cheapest
// candidates go first, the others only if none of those has capacity.
const maxOverrides = 60

// fleetCapacityTypes maps capacity types to CreateFleet's default target capacity types.
var fleetCapacityTypes = map[string]ec2types.DefaultTargetCapacityType{
	v1alpha5.CapacityTypeOnDemand: ec2types.DefaultTargetCapacityTypeOnDemand,
	v1alpha5.CapacityTypeSpot:     ec2types.DefaultTargetCapacityTypeSpot,
}

// Create launches request.Wanted() instances of the node class with CreateFleet (Type=instant),
// one request of that target capacity for all of them; request.Candidates must not be empty.
// The candidates of the first
// candidate's capacity type (up to maxOverrides) go in one request, one override per instance
// type and zone; when
// EC2 has no capacity for some, they are marked unavailable and the rest are tried at once, the
// other capacity type's last, so spot falls back to on-demand when the request allows it. When
// the candidates run out with fewer instances launched than wanted, those are returned.
func (p *Provider) Create(ctx context.Context, request cloudprovider.LaunchRequest, nodeClass NodeClass) ([]*cloudprovider.Instance, error) {
	zoneSubnets := subnet.ZonalSubnets(nodeClass.Subnets)
	capacityErr := &cloudprovider.InsufficientCapacityError{Reasons: map[cloudprovider.OfferingKey]string{}}
	var remaining []cloudprovider.Candidate
	var instances []*cloudprovider.Instance
	for _, c := range request.Candidates {
		key := c.Key()
		if reason, ok := p.unavailable.Reason(key); ok {
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
	for call := 0; len(remaining) > 0; call++ {
		capacityType := remaining[0].Offering.CapacityType
		var batch, rest []cloudprovider.Candidate
		for _, c := range remaining {
			if c.Offering.CapacityType == capacityType && len(batch) < maxOverrides {
				batch = append(batch, c)
			} else {
				rest = append(rest, c)
			}
		}
		launched, failed, err := p.launch(ctx, request, nodeClass, batch, zoneSubnets, capacityType, request.Wanted()-len(instances), call)
		instances = append(instances, launched...)
		// EC2 names the offerings it had no capacity for even when another one launched.
		for _, c := range batch {
			key := c.Key()
			reason, ok := failed[key]
			if !ok {
				rest = append(rest, c)
				continue
			}
			// A used-up quota is the account's to raise, not EC2's capacity to come back: the
			// offering stays offered, so that each launch says so until the user acts.
			if !quotaErrorCodes[reason] {
				p.unavailable.Mark(key, reason)
			}
			capacityErr.Offerings = append(capacityErr.Offerings, key)
			capacityErr.Reasons[key] = reason
		}
		if unread := (*cloudprovider.UnreadInstancesError)(nil); errors.As(err, &unread) {
			// The caller reads them again; launching more for them would double them.
			return instances, err
		}
		if err != nil {
			if len(instances) > 0 {
				// What launched already has to reach the caller, or it would wait for garbage
				// collection without a Node.
				return instances, nil
			}
			return nil, err
		}
		if len(instances) == request.Wanted() {
			break
		}
		remaining = rest
	}
	if len(instances) == 0 {
		capacityErr.Err = errors.New("EC2 had no capacity for any of them")
		for _, reason := range capacityErr.Reasons {
			if quotaErrorCodes[reason] {
				return nil, &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonVCPUQuotaExceeded, Err: fmt.Errorf(
					"%w; the account's vCPU quota for the instance types is used up: raise it (Service Quotas, EC2, Running On-Demand or All Spot instance requests of their family), or allow other instance types", capacityErr)}
			}
		}
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
func (p *Provider) launch(ctx context.Context, request cloudprovider.LaunchRequest, nodeClass NodeClass, batch []cloudprovider.Candidate, zoneSubnets map[string]subnet.Subnet, capacityType string, count, call int) ([]*cloudprovider.Instance, map[cloudprovider.OfferingKey]string, error) {
	configs, err := p.launchTemplateConfigs(ctx, request, nodeClass, batch, zoneSubnets)
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
		// On-demand launches the candidates in Karpenter's ranking (cheapest first, as the plan
		// shows): lowest-price would break ties between equal prices, such as one type's in
		// every zone, its own way. Spot weighs the pools' spare capacity first, then price, as
		// AWS recommends for fewer interruptions: among ample pools it takes the cheapest.
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized},
		SpotOptions:     &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		// An instant fleet tags only itself and its instances.
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: p.instanceTags(request, nodeClass)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: p.instanceTags(request, nodeClass)},
		},
		ClientToken: clientToken(request.IdempotencyKey, call),
	}
	c, err := p.clients()
	if err != nil {
		return nil, nil, err
	}
	out, err := c.EC2.CreateFleet(ctx, input)
	if err != nil {
		if awsapi.ErrorCode(err) == "IdempotentParameterMismatch" {
			return nil, nil, &cloudprovider.LaunchedBeforeError{Key: request.IdempotencyKey, Err: err}
		}
		err = awsapi.CallError(err, "ec2:CreateFleet", fmt.Sprintf("a %s instance for %s", capacityType, launchedFor(request)))
		if required := actionRequired(nodeClass.LaunchTemplate != "", awsapi.ErrorCode(err), awsapi.ErrorMessage(err), err); required != nil {
			return nil, nil, required
		}
		return nil, nil, err
	}
	zoneOfSubnet := map[string]string{}
	for zone, s := range zoneSubnets {
		zoneOfSubnet[s.ID] = zone
	}
	failed, other := capacityFailures(out.Errors, batch, zoneOfSubnet)
	instances, err := p.describeAllLaunched(ctx, request, answered(out.Instances, zoneOfSubnet))
	if len(instances) > 0 || err != nil {
		return instances, failed, err
	}
	if len(failed) == 0 {
		var text []string
		for _, e := range other {
			text = append(text, fmt.Sprintf("%s: %s", sdkaws.ToString(e.ErrorCode), sdkaws.ToString(e.ErrorMessage)))
		}
		if len(text) == 0 {
			text = []string{"no instance and no error"}
		}
		err := fmt.Errorf("calling ec2:CreateFleet for %s, %s", launchedFor(request), strings.Join(text, "; "))
		for _, e := range other {
			if required := actionRequired(nodeClass.LaunchTemplate != "", sdkaws.ToString(e.ErrorCode), sdkaws.ToString(e.ErrorMessage), err); required != nil {
				return nil, nil, required
			}
		}
		return nil, nil, err
	}
	return nil, failed, nil
}

// answered are the instances one CreateFleet launched, as far as its answer tells: id, type,
// zone and capacity type.
func answered(launched []ec2types.CreateFleetInstance, zoneOfSubnet map[string]string) []*cloudprovider.Instance {
	var out []*cloudprovider.Instance
	for _, l := range launched {
		instanceType, zone := "", ""
		if l.LaunchTemplateAndOverrides != nil && l.LaunchTemplateAndOverrides.Overrides != nil {
			o := l.LaunchTemplateAndOverrides.Overrides
			instanceType = string(o.InstanceType)
			zone = cmp.Or(sdkaws.ToString(o.AvailabilityZone), zoneOfSubnet[sdkaws.ToString(o.SubnetId)])
		}
		capacityType := v1alpha5.CapacityTypeOnDemand
		if l.Lifecycle == ec2types.InstanceLifecycleSpot {
			capacityType = v1alpha5.CapacityTypeSpot
		}
		for _, id := range l.InstanceIds {
			out = append(out, &cloudprovider.Instance{ID: id, ProviderID: providerID(zone, id), InstanceType: instanceType, Zone: zone, CapacityType: capacityType})
		}
	}
	return out
}

// describeConcurrency bounds the DescribeInstances calls of one launch that run at once.
const describeConcurrency = 10

// describeAllLaunched reads the instances one CreateFleet launched: all of them in one
// DescribeInstances call first, then each the call did not settle (EC2 not knowing it yet, or
// not its private DNS name) on its own, several at once. Those it could not read are returned as
// a *cloudprovider.UnreadInstancesError, as the answer told them, beside those it read: they
// run, and are the caller's.
func (p *Provider) describeAllLaunched(ctx context.Context, request cloudprovider.LaunchRequest, launched []*cloudprovider.Instance) ([]*cloudprovider.Instance, error) {
	described := make([]*cloudprovider.Instance, len(launched))
	errs := make([]error, len(launched))
	settled := p.readSettled(ctx, launched)
	var group errgroup.Group
	group.SetLimit(describeConcurrency)
	for n, instance := range launched {
		if described[n] = settled[instance.ID]; described[n] != nil {
			continue
		}
		group.Go(func() error {
			described[n], errs[n] = p.describeLaunched(ctx, instance.ID)
			return nil
		})
	}
	_ = group.Wait()
	var read []*cloudprovider.Instance
	unread := &cloudprovider.UnreadInstancesError{}
	for n, instance := range described {
		if errs[n] != nil {
			instance = launched[n]
			unread.Instances = append(unread.Instances, instance)
			unread.Err = cmp.Or(unread.Err, errs[n])
		} else {
			read = append(read, instance)
		}
		instance.Labels = launchedLabels(request, instance)
	}
	if len(unread.Instances) > 0 {
		return read, unread
	}
	return read, nil
}

// capacityFailures maps CreateFleet's errors to the batch's offerings EC2 had no capacity for,
// with the error code; an error that names no override applies to all. The other errors are
// returned as they are.
func capacityFailures(errs []ec2types.CreateFleetError, batch []cloudprovider.Candidate, zoneOfSubnet map[string]string) (map[cloudprovider.OfferingKey]string, []ec2types.CreateFleetError) {
	failed := map[cloudprovider.OfferingKey]string{}
	var other []ec2types.CreateFleetError
	for _, e := range errs {
		code := sdkaws.ToString(e.ErrorCode)
		if !capacityErrorCodes[code] {
			other = append(other, e)
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
