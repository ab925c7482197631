// Package v1 holds the karpenter.sh/v1 API: the NodePool, the nodes Karpenter may launch for
// pending pods, and the NodeClaim, the record of one node Karpenter launches, from the decision
// to launch it to the termination of its instance.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
