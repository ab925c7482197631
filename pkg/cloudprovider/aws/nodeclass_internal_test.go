package aws

import (
	"errors"
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
)

// TestActionRequiredNamesTheBlocksField: an error of a launch only the user can fix names the
// provider block's field to fix; a launch template of the user's holds the instance profile,
// security groups and AMI.
func TestActionRequiredNamesTheBlocksField(t *testing.T) {
	own, users := &ProviderBlock{}, &ProviderBlock{LaunchTemplate: "mine"}
	for _, tc := range []struct {
		name   string
		block  *ProviderBlock
		reason string
		field  string
	}{
		{"instance profile", own, cloudprovider.ReasonInvalidInstanceProfile, fieldInstanceProfile},
		{"the template's instance profile", users, cloudprovider.ReasonInvalidInstanceProfile, fieldLaunchTemplate},
		{"the user's template", users, cloudprovider.ReasonInvalidLaunchTemplate, fieldLaunchTemplate},
		{"subnet", own, cloudprovider.ReasonInvalidSubnet, fieldSubnetSelector},
		{"security group", own, cloudprovider.ReasonInvalidSecurityGroup, fieldSecurityGroupSelector},
		{"the template's security group", users, cloudprovider.ReasonInvalidSecurityGroup, fieldLaunchTemplate},
		{"Karpenter's AMI", own, cloudprovider.ReasonInvalidAMI, ""},
		{"the template's AMI", users, cloudprovider.ReasonInvalidAMI, fieldLaunchTemplate},
		{"a permission", own, cloudprovider.ReasonUnauthorized, ""},
		{"a used-up quota", own, cloudprovider.ReasonVCPUQuotaExceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cause := errors.New("the call's error")
			err := blockError(tc.block, &cloudprovider.ActionRequiredError{Reason: tc.reason, Err: cause})
			var got *cloudprovider.ActionRequiredError
			if !errors.As(err, &got) || got.Reason != tc.reason || got.Field != tc.field || !errors.Is(err, cause) {
				t.Errorf("= %+v, want %s on %q wrapping the call's error", err, tc.reason, tc.field)
			}
		})
	}
	// A field a provider named already stays.
	named := &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonInvalidSubnet, Field: "elsewhere"}
	if err := blockError(own, named); !errors.Is(err, named) || named.Field != "elsewhere" {
		t.Errorf("= %+v, want the error as it was", err)
	}
	var required *cloudprovider.ActionRequiredError
	err := blockError(&ProviderBlock{SecurityGroupSelector: map[string]string{"Name": "missing"}}, &launchtemplate.NoSecurityGroupError{})
	if !errors.As(err, &required) || required.Reason != cloudprovider.ReasonInvalidSecurityGroup || required.Field != fieldSecurityGroupSelector ||
		!strings.HasPrefix(err.Error(), "no security group matches securityGroupSelector map[Name:missing]") {
		t.Errorf("no security group = %v, want action required on %s naming the selector", err, fieldSecurityGroupSelector)
	}
	if err := blockError(own, nil); err != nil {
		t.Errorf("no error = %v", err)
	}
}
