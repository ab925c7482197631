package webhook

import (
	"context"
	"errors"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// mainResourceOnly limits validation to the resource itself: status and scale updates are
// written by controllers and must not be held up by the spec.
var mainResourceOnly = []string{""}

// skipValidation reports whether ctx is a subresource update, or an update whose old
// object's spec, compared by same, equals the new one. Such updates (status, labels,
// finalizers) are admitted without validating the spec, so an object stored before a rule
// existed can still be changed and deleted.
func skipValidation[T any](ctx context.Context, same func(old T) bool) bool {
	if apis.GetUpdatedSubresource(ctx) != "" {
		return true
	}
	if !apis.IsInUpdate(ctx) {
		return false
	}
	old, ok := apis.GetBaseline(ctx).(T)
	return ok && same(old)
}

// idError places the cloud's verdict on a type and id: at typePath for a type no cloud
// registered, at idPath otherwise. The cloud's message is shown as it is.
func idError(err error, typePath, idPath string) *apis.FieldError {
	if err == nil {
		return nil
	}
	var unsupported *cloudprovider.UnsupportedTypeError
	if errors.As(err, &unsupported) {
		return &apis.FieldError{Message: err.Error(), Paths: []string{typePath}}
	}
	return &apis.FieldError{Message: err.Error(), Paths: []string{idPath}}
}

// createAndUpdate are the operations the validation webhook is called on: a deletion admits
// nothing to validate, and must not wait on a webhook that is down.
var createAndUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
