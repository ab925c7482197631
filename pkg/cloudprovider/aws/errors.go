package aws

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// accessDeniedCodes are the codes AWS services use when IAM refuses a call.
var accessDeniedCodes = map[string]bool{
	"AccessDenied":          true, // awsquery services, SQS and CloudWatch legacy codes
	"AccessDeniedException": true, // JSON services (EKS)
	"UnauthorizedOperation": true, // EC2
}

// callError wraps a failed call with the IAM action and the resource, mapping
// refusals and missing resources to the cloudprovider's typed errors.
func callError(err error, action, resource string, notFoundCodes ...string) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		if accessDeniedCodes[code] {
			return &cloudprovider.AccessDeniedError{Action: action, Resource: resource, Err: err}
		}
		for _, c := range notFoundCodes {
			if code == c {
				return &cloudprovider.NotFoundError{Resource: resource, Err: err}
			}
		}
	}
	return fmt.Errorf("calling %s on %s, %w", action, resource, err)
}

// apiErrorCode is the AWS error code of err, "" if it is not an API error.
func apiErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
