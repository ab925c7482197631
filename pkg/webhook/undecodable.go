package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	knativewebhook "knative.dev/pkg/webhook"
	"knative.dev/pkg/webhook/json"
	"knative.dev/pkg/webhook/resourcesemantics"
)

// undecodableAdmitted lets an object its defaulter cannot decode into the Go type through
// unchanged. Mutating admission runs before the API server checks the CRD schema, so without
// it a HorizontalAutoscaler target written "70%" would be refused with the Go decoder's quantity
// regex instead of the schema's message (write 70, without the % sign); the schema, which
// covers every field, still refuses the object.
type undecodableAdmitted struct {
	knativewebhook.AdmissionController
	types map[schema.GroupVersionKind]resourcesemantics.GenericCRD
}

func (u undecodableAdmitted) Admit(ctx context.Context, request *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	kind := schema.GroupVersionKind{Group: request.Kind.Group, Version: request.Kind.Version, Kind: request.Kind.Kind}
	if handler, ok := u.types[kind]; ok && len(request.Object.Raw) > 0 {
		if err := json.Decode(request.Object.Raw, handler.DeepCopyObject(), false); err != nil {
			return &admissionv1.AdmissionResponse{UID: request.UID, Allowed: true}
		}
	}
	return u.AdmissionController.Admit(ctx, request)
}
