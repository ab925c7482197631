// Package subnet finds the subnets instances launch into, by selector terms, and picks one in
// each zone for a launch.
package subnet

import (
	"context"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

// fields are the subnet's filters; subnets have no name but their Name tag.
var fields = selector.Fields{Kind: "subnets", ID: "subnet-id"}

// Subnet is what a launch needs of a subnet.
type Subnet struct {
	ID, Zone string
	// ZoneID names the zone the same in every account (usw2-az1).
	ZoneID         string
	AvailableIPv4s int32
}

// Provider lists subnets by selector terms, keeping each selection for a minute.
type Provider struct {
	clients    awsapi.ClientsFunc
	selections *selector.Selections[Subnet]
}

// NewProvider builds the provider; it does no I/O.
func NewProvider(clients awsapi.ClientsFunc, clk clock.PassiveClock) *Provider {
	return &Provider{clients: clients, selections: selector.NewSelections(fields, func(s Subnet) string { return s.ID }, clk)}
}

// List returns the subnets any of the terms selects, sorted by id; none is not an error
// (selector.Selections).
func (p *Provider) List(ctx context.Context, terms []selector.Term) ([]Subnet, error) {
	return p.selections.List(ctx, terms, func(ctx context.Context, filters []ec2types.Filter) ([]Subnet, error) {
		c, err := p.clients()
		if err != nil {
			return nil, err
		}
		var out []Subnet
		pages := ec2.NewDescribeSubnetsPaginator(c.EC2, &ec2.DescribeSubnetsInput{Filters: filters})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, awsapi.CallError(err, "ec2:DescribeSubnets", "subnets selected by "+selector.Key(terms))
			}
			for _, s := range page.Subnets {
				out = append(out, Subnet{ID: sdkaws.ToString(s.SubnetId), Zone: sdkaws.ToString(s.AvailabilityZone),
					ZoneID: sdkaws.ToString(s.AvailabilityZoneId), AvailableIPv4s: sdkaws.ToInt32(s.AvailableIpAddressCount)})
			}
		}
		return out, nil
	})
}

// Zones is the set of zones the subnets are in.
func Zones(subnets []Subnet) map[string]bool {
	zones := map[string]bool{}
	for _, s := range subnets {
		zones[s.Zone] = true
	}
	return zones
}

// ZonalSubnets picks one subnet in each zone, the one with the most free addresses.
func ZonalSubnets(subnets []Subnet) map[string]Subnet {
	picked := map[string]Subnet{}
	for _, s := range subnets {
		if p, ok := picked[s.Zone]; !ok || s.AvailableIPv4s > p.AvailableIPv4s {
			picked[s.Zone] = s
		}
	}
	return picked
}
