package instance

import (
	"errors"
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// TestActionRequired: the EC2 errors of a launch that only the user can fix, each with its
// cause; the caller names the field to fix.
func TestActionRequired(t *testing.T) {
	for _, tc := range []struct {
		name          string
		userTemplate  bool
		code, message string
		reason        string
	}{
		{"instance profile", false, "InvalidParameterValue", "Value (p) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", cloudprovider.ReasonInvalidInstanceProfile},
		{"the template's instance profile", true, "InvalidParameterValue", "Value (p) for parameter iamInstanceProfile.arn is invalid.", cloudprovider.ReasonInvalidInstanceProfile},
		{"another invalid parameter", false, "InvalidParameterValue", "Value (x) for parameter priority is invalid.", ""},
		{"the user's template", true, "InvalidLaunchTemplateName.NotFoundException", "", cloudprovider.ReasonInvalidLaunchTemplate},
		{"Karpenter's template, deleted behind its cache", false, "InvalidLaunchTemplateName.NotFoundException", "", ""},
		{"subnet", false, "InvalidSubnetID.NotFound", "", cloudprovider.ReasonInvalidSubnet},
		{"security group", false, "InvalidGroup.NotFound", "", cloudprovider.ReasonInvalidSecurityGroup},
		{"the template's security group", true, "InvalidSecurityGroupID.NotFound", "", cloudprovider.ReasonInvalidSecurityGroup},
		{"Karpenter's AMI", false, "InvalidAMIID.NotFound", "", cloudprovider.ReasonInvalidAMI},
		{"the template's AMI", true, "InvalidAMIID.Malformed", "", cloudprovider.ReasonInvalidAMI},
		{"a permission", false, "UnauthorizedOperation", "", cloudprovider.ReasonUnauthorized},
		{"capacity", false, "InsufficientInstanceCapacity", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cause := errors.New("the call's error")
			got := actionRequired(tc.userTemplate, tc.code, tc.message, cause)
			if tc.reason == "" {
				if got != nil {
					t.Errorf("= %+v, want none", got)
				}
				return
			}
			if got == nil || got.Reason != tc.reason || got.Field != "" || !errors.Is(got, cause) {
				t.Errorf("= %+v, want %s, no field, wrapping the call's error", got, tc.reason)
			}
		})
	}
}
