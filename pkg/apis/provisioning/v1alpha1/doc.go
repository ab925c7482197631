// Package v1alpha1 holds the karpenter.sh/v1alpha1 API: the NodeOverlay, which changes what
// the scheduling simulation believes of the instance types it matches (their price, extended
// resources) without changing the instances.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
