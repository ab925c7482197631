package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/runtime"
)

// subnet is what a launch needs of a subnet.
type subnet struct {
	id, zone       string
	availableIPv4s int32
}

// block is the request's provider block, with the defaults applied when the webhook did not
// (a Provisioner created while it was down).
func (i *Instances) block(ctx context.Context, provider *runtime.RawExtension) (*ProviderBlock, error) {
	block, err := ParseProviderBlock(i.DefaultProvider(ctx, provider))
	if err != nil {
		return nil, err
	}
	if errs := i.ValidateProvider(ctx, &runtime.RawExtension{Raw: mustJSON(block)}); errs != nil {
		return nil, fmt.Errorf("invalid AWS provider block, %w", errs)
	}
	return block, nil
}

// selectorFilters turn a tag selector into EC2 filters: a value "*" matches any value of its
// key (tag-key), any other value exactly (tag:<key>).
func selectorFilters(selector map[string]string) []ec2types.Filter {
	var filters []ec2types.Filter
	for _, key := range slices.Sorted(maps.Keys(selector)) {
		if selector[key] == AnyValue {
			filters = append(filters, ec2types.Filter{Name: sdkaws.String("tag-key"), Values: []string{key}})
		} else {
			filters = append(filters, ec2types.Filter{Name: sdkaws.String("tag:" + key), Values: []string{selector[key]}})
		}
	}
	return filters
}

// selectorKey is a selector's cache key: its pairs, sorted.
func selectorKey(selector map[string]string) string {
	var b strings.Builder
	for _, key := range slices.Sorted(maps.Keys(selector)) {
		fmt.Fprintf(&b, "%q=%q,", key, selector[key])
	}
	return b.String()
}

// resolveSubnets returns the subnets the selector selects, sorted by id; an empty selection is
// an error naming the selector, since nothing could launch.
func (i *Instances) resolveSubnets(ctx context.Context, selector map[string]string) ([]subnet, error) {
	key := selectorKey(selector)
	if cached, ok := i.subnets.Get(key); ok {
		return cached.([]subnet), nil
	}
	c, err := i.clients()
	if err != nil {
		return nil, err
	}
	var subnets []subnet
	pages := ec2.NewDescribeSubnetsPaginator(c.ec2, &ec2.DescribeSubnetsInput{Filters: selectorFilters(selector)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, callError(err, "ec2:DescribeSubnets", "subnets selected by "+key)
		}
		for _, s := range page.Subnets {
			subnets = append(subnets, subnet{id: sdkaws.ToString(s.SubnetId), zone: sdkaws.ToString(s.AvailabilityZone), availableIPv4s: sdkaws.ToInt32(s.AvailableIpAddressCount)})
		}
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("no subnet matches subnetSelector %v", selector)
	}
	slices.SortFunc(subnets, func(a, b subnet) int { return strings.Compare(a.id, b.id) })
	i.subnets.Add(key, subnets, selectorCacheTTL)
	return subnets, nil
}

// zonesOf is the set of zones the subnets are in.
func zonesOf(subnets []subnet) map[string]bool {
	zones := map[string]bool{}
	for _, s := range subnets {
		zones[s.zone] = true
	}
	return zones
}

// subnetPerZone picks one subnet in each zone, the one with the most free addresses.
func subnetPerZone(subnets []subnet) map[string]subnet {
	picked := map[string]subnet{}
	for _, s := range subnets {
		if p, ok := picked[s.zone]; !ok || s.availableIPv4s > p.availableIPv4s {
			picked[s.zone] = s
		}
	}
	return picked
}

// resolveSecurityGroups returns the ids of the security groups the selector selects, sorted.
func (i *Instances) resolveSecurityGroups(ctx context.Context, selector map[string]string) ([]string, error) {
	key := selectorKey(selector)
	if cached, ok := i.securityGroups.Get(key); ok {
		return cached.([]string), nil
	}
	c, err := i.clients()
	if err != nil {
		return nil, err
	}
	var ids []string
	pages := ec2.NewDescribeSecurityGroupsPaginator(c.ec2, &ec2.DescribeSecurityGroupsInput{Filters: selectorFilters(selector)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, callError(err, "ec2:DescribeSecurityGroups", "security groups selected by "+key)
		}
		for _, g := range page.SecurityGroups {
			ids = append(ids, sdkaws.ToString(g.GroupId))
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no security group matches securityGroupSelector %v", selector)
	}
	slices.Sort(ids)
	i.securityGroups.Add(key, ids, selectorCacheTTL)
	return ids, nil
}
