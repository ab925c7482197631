// Package v1alpha5 holds the karpenter.sh/v1alpha5 API: the Provisioner, which
// tells Karpenter what nodes it may launch for pods that cannot be scheduled.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha5
