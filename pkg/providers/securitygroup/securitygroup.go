// Package securitygroup finds the security groups of the nodes, by selector terms.
package securitygroup

import (
	"context"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

var fields = selector.Fields{Kind: "security groups", ID: "group-id", Name: "group-name"}

// SecurityGroup is a VPC security group.
type SecurityGroup struct {
	ID, Name string
}

// Provider lists security groups by selector terms, keeping each selection for a minute.
type Provider struct {
	clients    awsapi.ClientsFunc
	selections *selector.Selections[SecurityGroup]
}

// NewProvider builds the provider; it does no I/O.
func NewProvider(clients awsapi.ClientsFunc, clk clock.PassiveClock) *Provider {
	return &Provider{clients: clients, selections: selector.NewSelections(fields, func(g SecurityGroup) string { return g.ID }, clk)}
}

// List returns the security groups any of the terms selects, sorted by id; none is not an
// error (selector.Selections).
func (p *Provider) List(ctx context.Context, terms []selector.Term) ([]SecurityGroup, error) {
	return p.selections.List(ctx, terms, func(ctx context.Context, filters []ec2types.Filter) ([]SecurityGroup, error) {
		c, err := p.clients()
		if err != nil {
			return nil, err
		}
		var out []SecurityGroup
		pages := ec2.NewDescribeSecurityGroupsPaginator(c.EC2, &ec2.DescribeSecurityGroupsInput{Filters: filters})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, awsapi.CallError(err, "ec2:DescribeSecurityGroups", "security groups selected by "+selector.Key(terms))
			}
			for _, g := range page.SecurityGroups {
				out = append(out, SecurityGroup{ID: sdkaws.ToString(g.GroupId), Name: sdkaws.ToString(g.GroupName)})
			}
		}
		return out, nil
	})
}

// IDs are the groups' ids, in order.
func IDs(groups []SecurityGroup) []string {
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		ids = append(ids, g.ID)
	}
	return ids
}
