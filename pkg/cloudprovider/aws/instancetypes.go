package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// catalogueEntry is an instance type as read from EC2, before prices and a Provisioner's
// subnets narrow its offerings.
type catalogueEntry struct {
	info ec2types.InstanceTypeInfo
	// zones the type is offered in, sorted.
	zones []string
	// capacityTypes the type can be bought as (on-demand, spot).
	capacityTypes []string
}

// usageClasses maps EC2's usage classes to capacity types.
var usageClasses = map[ec2types.UsageClassType]string{
	ec2types.UsageClassTypeOnDemand: v1alpha5.CapacityTypeOnDemand,
	ec2types.UsageClassTypeSpot:     v1alpha5.CapacityTypeSpot,
}

// RefreshInstanceTypes re-reads the region's instance types and the zones each is offered in.
// Start calls it on its period; the catalogue is replaced only when both reads succeed.
func (i *Instances) RefreshInstanceTypes(ctx context.Context) error {
	entries, err := i.readCatalogue(ctx)
	i.mu.Lock()
	defer i.mu.Unlock()
	i.catalogueErr = err
	if err == nil {
		i.catalogue = entries
	}
	return err
}

func (i *Instances) readCatalogue(ctx context.Context) ([]catalogueEntry, error) {
	c, err := i.clients()
	if err != nil {
		return nil, err
	}
	zones := map[string][]string{}
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	for offerings.HasMorePages() {
		page, err := offerings.NextPage(ctx)
		if err != nil {
			return nil, callError(err, "ec2:DescribeInstanceTypeOfferings", "the region's instance type offerings")
		}
		for _, o := range page.InstanceTypeOfferings {
			zones[string(o.InstanceType)] = append(zones[string(o.InstanceType)], sdkaws.ToString(o.Location))
		}
	}
	var entries []catalogueEntry
	types := ec2.NewDescribeInstanceTypesPaginator(c.ec2, &ec2.DescribeInstanceTypesInput{})
	for types.HasMorePages() {
		page, err := types.NextPage(ctx)
		if err != nil {
			return nil, callError(err, "ec2:DescribeInstanceTypes", "the region's instance types")
		}
		for _, info := range page.InstanceTypes {
			if !launchable(info, i.opts.IncludeBareMetal) || len(zones[string(info.InstanceType)]) == 0 {
				continue
			}
			var capacityTypes []string
			for _, class := range info.SupportedUsageClasses {
				if ct, ok := usageClasses[class]; ok {
					capacityTypes = append(capacityTypes, ct)
				}
			}
			entries = append(entries, catalogueEntry{
				info:          info,
				zones:         slices.Sorted(slices.Values(zones[string(info.InstanceType)])),
				capacityTypes: capacityTypes,
			})
		}
	}
	slices.SortFunc(entries, func(a, b catalogueEntry) int {
		return strings.Compare(string(a.info.InstanceType), string(b.info.InstanceType))
	})
	return entries, nil
}

// InstanceTypes answers from the catalogue and prices read in the background; only the
// Provisioner's subnets may be read (they are cached), to know its zones.
func (i *Instances) InstanceTypes(ctx context.Context, constraints cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	block, err := i.block(ctx, constraints.Provider)
	if err != nil {
		return nil, err
	}
	subnets, err := i.resolveSubnets(ctx, block.SubnetSelector)
	if err != nil {
		return nil, err
	}
	requirements, err := wellKnownRequirements(constraints.Requirements)
	if err != nil {
		return nil, err
	}
	i.mu.RLock()
	catalogue, catalogueErr, prices := i.catalogue, i.catalogueErr, i.prices
	i.mu.RUnlock()
	if catalogue == nil {
		if catalogueErr != nil {
			return nil, fmt.Errorf("no instance types read yet, %w", catalogueErr)
		}
		return nil, errors.New("no instance types read yet")
	}
	return buildInstanceTypes(catalogue, prices, zonesOf(subnets), requirements, i.isUnavailable), nil
}

// buildInstanceTypes turns catalogue entries into the instance types whose offerings are in
// zones, have a price and meet requirements. It is pure but for unavailable, which reports
// offerings the cloud recently had no capacity for.
func buildInstanceTypes(catalogue []catalogueEntry, prices priceBook, zones map[string]bool, requirements scheduling.Requirements, unavailable func(cloudprovider.OfferingKey) bool) []*cloudprovider.InstanceType {
	var types []*cloudprovider.InstanceType
	for _, entry := range catalogue {
		name := string(entry.info.InstanceType)
		labels := map[string]string{
			corev1.LabelArchStable: architecture(entry.info),
			corev1.LabelOSStable:   "linux",
		}
		var offerings []cloudprovider.Offering
		for _, zone := range entry.zones {
			if !zones[zone] {
				continue
			}
			for _, capacityType := range entry.capacityTypes {
				price, ok := prices.price(name, zone, capacityType)
				if !ok {
					continue
				}
				offeringLabels := maps.Clone(labels)
				offeringLabels[corev1.LabelInstanceTypeStable] = name
				offeringLabels[corev1.LabelTopologyZone] = zone
				offeringLabels[v1alpha5.CapacityTypeLabelKey] = capacityType
				if !requirements.MatchesLabels(offeringLabels) {
					continue
				}
				key := cloudprovider.OfferingKey{InstanceType: name, Zone: zone, CapacityType: capacityType}
				offerings = append(offerings, cloudprovider.Offering{Zone: zone, CapacityType: capacityType, Price: price, Available: !unavailable(key)})
			}
		}
		if len(offerings) == 0 {
			continue
		}
		types = append(types, &cloudprovider.InstanceType{
			Name:         name,
			Labels:       labels,
			Capacity:     capacity(entry.info),
			Overhead:     overhead(entry.info),
			Offerings:    offerings,
			VolumeLimits: map[string]int64{cloudprovider.EBSCSIDriver: ebsVolumeLimit(entry.info)},
		})
	}
	return types
}

// wellKnownRequirements keeps the requirements on the labels instance types and offerings
// carry; the others are about labels the Provisioner sets.
func wellKnownRequirements(requirements []corev1.NodeSelectorRequirement) (scheduling.Requirements, error) {
	out := scheduling.Requirements{}
	for _, r := range requirements {
		if !slices.Contains(v1alpha5.WellKnownLabels, r.Key) {
			continue
		}
		if err := out.Add(r.Key, r.Operator, r.Values...); err != nil {
			return nil, err
		}
	}
	return out, nil
}
