// Package v1 holds the karpenter.k8s.aws/v1 API: the EC2NodeClass, the AWS configuration of
// the nodes a NodePool launches (subnets, security groups, AMIs, the node's IAM identity, user
// data, kubelet settings, block devices, instance metadata options), and the vocabulary of the
// karpenter.k8s.aws label domain.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
