package webhook

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// scalableNodeGroup gives v1alpha1.ScalableNodeGroup its admission semantics.
type scalableNodeGroup struct {
	v1alpha1.ScalableNodeGroup
	cloud cloudprovider.Validator
}

func (s *scalableNodeGroup) DeepCopyObject() runtime.Object {
	return &scalableNodeGroup{ScalableNodeGroup: *s.ScalableNodeGroup.DeepCopy(), cloud: s.cloud}
}

func (s *scalableNodeGroup) SupportedSubResources() []string { return mainResourceOnly }

func (s *scalableNodeGroup) SupportedVerbs() []admissionregistrationv1.OperationType {
	return createAndUpdate
}

// SetDefaults has nothing to do: the schema defaults every field that has a default.
func (s *scalableNodeGroup) SetDefaults(context.Context) {}

func (s *scalableNodeGroup) Validate(ctx context.Context) *apis.FieldError {
	if skipValidation(ctx, func(old *scalableNodeGroup) bool {
		// Replicas changes through the scale subresource mostly, but also here; neither
		// makes the id any less valid than it was.
		return old.Spec.Type == s.Spec.Type && old.Spec.ID == s.Spec.ID
	}) {
		return nil
	}
	return ValidateScalableNodeGroup(&s.ScalableNodeGroup, s.cloud)
}

// ValidateScalableNodeGroup checks that the id is well formed for the node group's type, as
// the cloud that registered the type parses ids.
func ValidateScalableNodeGroup(s *v1alpha1.ScalableNodeGroup, cloud cloudprovider.Validator) *apis.FieldError {
	return idError(cloud.ValidateNodeGroupID(string(s.Spec.Type), s.Spec.ID), "spec.type", "spec.id")
}
