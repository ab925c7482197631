package instance

import (
	"strings"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
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

// quotaErrorCodes are CreateFleet's capacity errors that an account quota, not EC2's capacity,
// causes: when they are why nothing launched, the user must raise the quota.
var quotaErrorCodes = map[string]bool{"VcpuLimitExceeded": true}

// actionRequired tells whether an EC2 error of a launch, a call's or one of CreateFleet's per
// override, is one only the user can fix, and its cause; the caller, which knows where the node
// class came from, names the field to fix (with a launch template of the user's, userTemplate,
// the template holds the instance profile, security groups and AMI). err is what the returned
// error wraps; nil for any other error.
func actionRequired(userTemplate bool, code, message string, err error) *cloudprovider.ActionRequiredError {
	var reason string
	switch {
	case code == "InvalidParameterValue" && strings.Contains(strings.ToLower(message), "iaminstanceprofile"):
		reason = cloudprovider.ReasonInvalidInstanceProfile
	case strings.HasPrefix(code, "InvalidLaunchTemplateName.") || strings.HasPrefix(code, "InvalidLaunchTemplateId."):
		if !userTemplate {
			// Karpenter's own template, deleted behind its cache: not the user's to fix.
			return nil
		}
		reason = cloudprovider.ReasonInvalidLaunchTemplate
	case strings.HasPrefix(code, "InvalidSubnetID."):
		reason = cloudprovider.ReasonInvalidSubnet
	case strings.HasPrefix(code, "InvalidGroup.") || strings.HasPrefix(code, "InvalidSecurityGroupID.") || strings.HasPrefix(code, "InvalidGroupId."):
		reason = cloudprovider.ReasonInvalidSecurityGroup
	case strings.HasPrefix(code, "InvalidAMIID."):
		reason = cloudprovider.ReasonInvalidAMI
	case awsapi.IsAccessDenied(code):
		reason = cloudprovider.ReasonUnauthorized
	default:
		return nil
	}
	return &cloudprovider.ActionRequiredError{Reason: reason, Err: err}
}
