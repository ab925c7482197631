// Package instancetype keeps the region's instance types (the catalogue, re-read in the
// background) and turns them into the cloudprovider's instance types: the node's shape as an
// EKS AMI's kubelet reports it, and the offerings a node class's zones, the prices and recent
// capacity errors leave.
package instancetype

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/pricing"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// Options change the node shapes and the types offered.
type Options struct {
	// IncludeBareMetal offers bare metal instance types too.
	IncludeBareMetal bool
	// VMMemoryOverhead is the share of an instance's memory its node does not report.
	VMMemoryOverhead float64
	// ReservedENIs are network interfaces no pod gets an address from (VPC CNI custom
	// networking): they count neither in max-pods nor in the kube-reserved memory.
	ReservedENIs int
}

// Provider answers instance types from the catalogue Refresh reads, the prices' last book and
// the offerings recently unavailable; answering does no I/O.
type Provider struct {
	clients          awsapi.ClientsFunc
	includeBareMetal bool
	shape            nodeShape
	prices           *pricing.Provider
	unavailable      *UnavailableOfferings

	mu sync.RWMutex
	// catalogue is the instance types of the region with the zones they are offered in.
	catalogue []catalogueEntry
	// catalogueErr is the last refresh's failure, nil once one succeeded after it.
	catalogueErr error
}

// NewProvider builds the provider; it does no I/O: until Refresh has read the catalogue, List
// fails.
func NewProvider(clients awsapi.ClientsFunc, opts Options, prices *pricing.Provider, unavailable *UnavailableOfferings) *Provider {
	return &Provider{
		clients:          clients,
		includeBareMetal: opts.IncludeBareMetal,
		shape:            nodeShape{vmMemoryOverhead: opts.VMMemoryOverhead, reservedENIs: int64(opts.ReservedENIs)},
		prices:           prices,
		unavailable:      unavailable,
	}
}

// List returns the instance types with offerings in zones that have a price and meet the
// requirements on the well-known labels (those on other labels are the node's, not the
// type's), from the catalogue and prices read in the background. With storage (a node
// class's) they report the ephemeral storage it gives their nodes; without (a Provisioner's),
// none.
func (p *Provider) List(zones map[string]bool, requirements []corev1.NodeSelectorRequirement, storage *EphemeralStorage) ([]*cloudprovider.InstanceType, error) {
	wellKnown, err := wellKnownRequirements(requirements)
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	catalogue, catalogueErr := p.catalogue, p.catalogueErr
	p.mu.RUnlock()
	if catalogue == nil {
		if catalogueErr != nil {
			return nil, fmt.Errorf("no instance types read yet, %w", catalogueErr)
		}
		return nil, errors.New("no instance types read yet")
	}
	return buildInstanceTypes(catalogue, p.prices.Book(), zones, wellKnown, p.unavailable.IsUnavailable, p.shape, storage), nil
}

// catalogueEntry is an instance type as read from EC2, before prices and a Provisioner's
// subnets narrow its offerings.
type catalogueEntry struct {
	info ec2types.InstanceTypeInfo
	// labels are the type's own (typeLabels, architecture, os), computed once per read of the
	// catalogue rather than on every listing.
	labels map[string]string
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

// Refresh re-reads the region's instance types and the zones each is offered in; the catalogue
// is replaced only when both reads succeed.
func (p *Provider) Refresh(ctx context.Context) error {
	entries, err := p.readCatalogue(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.catalogueErr = err
	if err == nil {
		p.catalogue = entries
	}
	return err
}

func (p *Provider) readCatalogue(ctx context.Context) ([]catalogueEntry, error) {
	c, err := p.clients()
	if err != nil {
		return nil, err
	}
	zones := map[string][]string{}
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.EC2, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	for offerings.HasMorePages() {
		page, err := offerings.NextPage(ctx)
		if err != nil {
			return nil, awsapi.CallError(err, "ec2:DescribeInstanceTypeOfferings", "the region's instance type offerings")
		}
		for _, o := range page.InstanceTypeOfferings {
			zones[string(o.InstanceType)] = append(zones[string(o.InstanceType)], sdkaws.ToString(o.Location))
		}
	}
	var entries []catalogueEntry
	types := ec2.NewDescribeInstanceTypesPaginator(c.EC2, &ec2.DescribeInstanceTypesInput{})
	for types.HasMorePages() {
		page, err := types.NextPage(ctx)
		if err != nil {
			return nil, awsapi.CallError(err, "ec2:DescribeInstanceTypes", "the region's instance types")
		}
		for _, info := range page.InstanceTypes {
			if !launchable(info, p.includeBareMetal) || len(zones[string(info.InstanceType)]) == 0 {
				continue
			}
			var capacityTypes []string
			for _, class := range info.SupportedUsageClasses {
				if ct, ok := usageClasses[class]; ok {
					capacityTypes = append(capacityTypes, ct)
				}
			}
			labels := typeLabels(info)
			labels[corev1.LabelArchStable] = architecture(info)
			labels[corev1.LabelOSStable] = "linux"
			entries = append(entries, catalogueEntry{
				info:          info,
				labels:        labels,
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

// buildInstanceTypes turns catalogue entries into the instance types whose offerings are in
// zones, have a price and meet requirements, with the ephemeral storage storage gives their
// nodes when it is set. It is pure but for unavailable, which reports offerings the cloud
// recently had no capacity for.
func buildInstanceTypes(catalogue []catalogueEntry, prices pricing.Book, zones map[string]bool, requirements scheduling.Requirements, unavailable func(cloudprovider.OfferingKey) bool, shape nodeShape, storage *EphemeralStorage) []*cloudprovider.InstanceType {
	var types []*cloudprovider.InstanceType
	for _, entry := range catalogue {
		name := string(entry.info.InstanceType)
		// The requirements are on well-known labels only (wellKnownRequirements): the offering's
		// and the type's architecture and OS.
		offeringLabels := map[string]string{
			corev1.LabelArchStable:         entry.labels[corev1.LabelArchStable],
			corev1.LabelOSStable:           entry.labels[corev1.LabelOSStable],
			corev1.LabelInstanceTypeStable: name,
		}
		var offerings []cloudprovider.Offering
		for _, zone := range entry.zones {
			if !zones[zone] {
				continue
			}
			for _, capacityType := range entry.capacityTypes {
				price, ok := prices.Price(name, zone, capacityType)
				if !ok {
					continue
				}
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
		it := &cloudprovider.InstanceType{
			Name:         name,
			Labels:       maps.Clone(entry.labels),
			Capacity:     shape.capacity(entry.info),
			Overhead:     shape.overhead(entry.info),
			Offerings:    offerings,
			VolumeLimits: map[string]int64{cloudprovider.EBSCSIDriver: ebsVolumeLimit(entry.info)},
		}
		if storage != nil {
			ephemeral := storage.capacity(entry.info)
			it.Capacity[corev1.ResourceEphemeralStorage] = ephemeral
			it.Overhead[corev1.ResourceEphemeralStorage] = KubeletSettings{}.ephemeralStorageOverhead(ephemeral)
		}
		types = append(types, it)
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
