package webhook

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// ScaleAccess decides whether the user behind an admission request may resize a
// HorizontalAutoscaler's target themselves. The controller scales any target through its
// cluster-wide */scale grant, so without this check creating a HorizontalAutoscaler would
// lend that grant to anyone who may create one.
type ScaleAccess interface {
	// MayScale returns nil when user may update the scale subresource of target in
	// namespace, and otherwise an error fit to show the user as it is.
	MayScale(ctx context.Context, user *authenticationv1.UserInfo, namespace string, target v1alpha1.CrossVersionObjectReference) error
}

// NewScaleAccess asks the API server with SubjectAccessReviews, finding the target's
// resource through discovery.
func NewScaleAccess(client kubernetes.Interface) ScaleAccess {
	return &subjectAccessReviews{
		client: client,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
	}
}

type subjectAccessReviews struct {
	client kubernetes.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (s *subjectAccessReviews) MayScale(ctx context.Context, user *authenticationv1.UserInfo, namespace string, target v1alpha1.CrossVersionObjectReference) error {
	if user == nil || user.Username == "" {
		return fmt.Errorf("the admission request names no user, so whether they may scale the target cannot be checked")
	}
	gv, err := schema.ParseGroupVersion(target.APIVersion)
	if err != nil {
		return fmt.Errorf("parsing apiVersion %q, %w", target.APIVersion, err)
	}
	gvk := gv.WithKind(target.Kind)
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A kind installed since discovery was cached: look again, once.
		s.mapper.Reset()
		mapping, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return fmt.Errorf("the API server does not serve %s, so whether you may scale it cannot be checked; install it first, %w", gvk, err)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for key, values := range user.Extra {
		extra[key] = authorizationv1.ExtraValue(values)
	}
	attributes := &authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: "update", Group: mapping.Resource.Group, Version: mapping.Resource.Version,
		Resource: mapping.Resource.Resource, Subresource: "scale", Name: target.Name,
	}
	review, err := s.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra, ResourceAttributes: attributes,
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking the API server whether %s may scale %s %s, %w", user.Username, gvk.Kind, target.Name, err)
	}
	if !review.Status.Allowed {
		return fmt.Errorf("%s may not update %s/scale %q in namespace %s; a HorizontalAutoscaler resizes its target with the controller's permissions, so only someone allowed to scale the target may point one at it",
			user.Username, mapping.Resource.GroupResource(), target.Name, namespace)
	}
	return nil
}

// validateScaleAccess places a refusal at spec.scaleTargetRef.
func validateScaleAccess(ctx context.Context, access ScaleAccess, h *v1alpha1.HorizontalAutoscaler) *apis.FieldError {
	if err := access.MayScale(ctx, apis.GetUserInfo(ctx), h.Namespace, h.Spec.ScaleTargetRef); err != nil {
		return &apis.FieldError{Message: err.Error(), Paths: []string{"spec.scaleTargetRef"}}
	}
	return nil
}
