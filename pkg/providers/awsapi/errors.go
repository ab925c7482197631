package awsapi

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

// IsAccessDenied reports whether an AWS error code says IAM refused the call.
func IsAccessDenied(code string) bool {
	return accessDeniedCodes[code]
}

// CallError wraps a failed call with the IAM action and the resource, mapping
// refusals and missing resources to the cloudprovider's typed errors.
func CallError(err error, action, resource string, notFoundCodes ...string) error {
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

// ErrorCode is the AWS error code of err, "" if it is not an API error.
func ErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// ErrorMessage is the AWS error message of err, "" if it is not an API error.
func ErrorMessage(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorMessage()
	}
	return ""
}
