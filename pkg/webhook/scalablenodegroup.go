package webhook

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

// scalableNodeGroup gives v1alpha1.ScalableNodeGroup its admission semantics.
type scalableNodeGroup struct {
	v1alpha1.ScalableNodeGroup
}

func (s *scalableNodeGroup) DeepCopyObject() runtime.Object {
	return &scalableNodeGroup{ScalableNodeGroup: *s.ScalableNodeGroup.DeepCopy()}
}

func (s *scalableNodeGroup) SupportedSubResources() []string { return mainResourceOnly }

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
	return ValidateScalableNodeGroup(&s.ScalableNodeGroup)
}

// ValidateScalableNodeGroup checks that the id is well formed for the node group's type.
func ValidateScalableNodeGroup(s *v1alpha1.ScalableNodeGroup) *apis.FieldError {
	var err error
	switch s.Spec.Type {
	case v1alpha1.AWSEC2AutoScalingGroup:
		_, err = aws.ParseAutoScalingGroupID(s.Spec.ID)
	case v1alpha1.AWSEKSNodeGroup:
		_, err = aws.ParseEKSNodeGroupID(s.Spec.ID)
	}
	if err != nil {
		return &apis.FieldError{Message: err.Error(), Paths: []string{"spec.id"}}
	}
	return nil
}
