// Package kubefake builds controller-runtime fake clients that answer as the operator's cache
// does: with Karpenter's scheme, the NodeClaim's status subresource and the field indexes the
// controllers select by.
package kubefake

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pods"
)

// NewClientBuilder is a fake client builder with Karpenter's scheme, status subresources and
// indexes; the caller adds objects and interceptors.
func NewClientBuilder() *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(apis.NewScheme()).
		WithStatusSubresource(&v1.NodeClaim{}).
		WithIndex(&corev1.Node{}, nodeclaims.NodeProviderIDField, nodeclaims.NodeProviderIDOf).
		WithIndex(&v1.NodeClaim{}, nodeclaims.NodeClaimProviderIDField, nodeclaims.NodeClaimProviderIDOf).
		WithIndex(&corev1.Pod{}, pods.NodeNameField, pods.NodeNameOf)
}
