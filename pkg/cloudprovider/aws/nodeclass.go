package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/instance"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// block is the request's provider block, with the defaults applied when the webhook did not
// (a Provisioner created while it was down).
func (i *Instances) block(ctx context.Context, provider *runtime.RawExtension) (*ProviderBlock, error) {
	block, err := ParseProviderBlock(i.DefaultProvider(ctx, provider))
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(block)
	if err != nil {
		return nil, fmt.Errorf("encoding the AWS provider block, %w", err)
	}
	if errs := i.ValidateProvider(ctx, &runtime.RawExtension{Raw: raw}); errs != nil {
		return nil, fmt.Errorf("invalid AWS provider block, %w", errs)
	}
	return block, nil
}

// subnetsOf returns the block's subnets; selecting none is an error naming the selector, since
// nothing could launch.
func (i *Instances) subnetsOf(ctx context.Context, block *ProviderBlock) ([]subnet.Subnet, error) {
	subnets, err := i.subnets.List(ctx, []selector.Term{{Tags: block.SubnetSelector}})
	if err != nil {
		return nil, err
	}
	if len(subnets) == 0 {
		return nil, &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonInvalidSubnet, Field: fieldSubnetSelector,
			Err: fmt.Errorf("no subnet matches subnetSelector %v", block.SubnetSelector)}
	}
	return subnets, nil
}

// nodeClass is what the block's instances are launched from.
func nodeClass(block *ProviderBlock, subnets []subnet.Subnet) instance.NodeClass {
	return instance.NodeClass{
		Subnets:         subnets,
		LaunchTemplate:  block.LaunchTemplate,
		SecurityGroups:  []selector.Term{{Tags: block.SecurityGroupSelector}},
		InstanceProfile: block.InstanceProfile,
		Tags:            block.Tags,
	}
}

// Block fields the causes of failed launches are about.
const (
	fieldInstanceProfile       = "spec.provider.instanceProfile"
	fieldLaunchTemplate        = "spec.provider.launchTemplate"
	fieldSubnetSelector        = "spec.provider.subnetSelector"
	fieldSecurityGroupSelector = "spec.provider.securityGroupSelector"
)

// blockError is a launch's error as the block's user must read it: security group terms that
// select none are the block's securityGroupSelector, and an error only the user can fix names
// the field that causes it.
func blockError(block *ProviderBlock, err error) error {
	var noGroup *launchtemplate.NoSecurityGroupError
	if errors.As(err, &noGroup) {
		return &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonInvalidSecurityGroup, Field: fieldSecurityGroupSelector,
			Err: fmt.Errorf("no security group matches securityGroupSelector %v", block.SecurityGroupSelector)}
	}
	var required *cloudprovider.ActionRequiredError
	if errors.As(err, &required) && required.Field == "" {
		// The providers report the cause; the field is this API's. The error is this launch's
		// own, so it is completed in place.
		required.Field = block.fieldOf(required.Reason)
	}
	return err
}

// fieldOf is the block's field that causes an error only the user can fix, "" when none does:
// with a launch template of the user's, the template holds the instance profile, security
// groups and AMI.
func (b *ProviderBlock) fieldOf(reason string) string {
	userTemplateOr := func(field string) string {
		if b.LaunchTemplate != "" {
			return fieldLaunchTemplate
		}
		return field
	}
	switch reason {
	case cloudprovider.ReasonInvalidInstanceProfile:
		return userTemplateOr(fieldInstanceProfile)
	case cloudprovider.ReasonInvalidLaunchTemplate:
		return fieldLaunchTemplate
	case cloudprovider.ReasonInvalidSubnet:
		return fieldSubnetSelector
	case cloudprovider.ReasonInvalidSecurityGroup:
		return userTemplateOr(fieldSecurityGroupSelector)
	case cloudprovider.ReasonInvalidAMI:
		return userTemplateOr("")
	}
	return ""
}
