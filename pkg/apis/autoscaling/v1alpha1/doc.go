// Package v1alpha1 holds the autoscaling.karpenter.sh/v1alpha1 API: HorizontalAutoscaler,
// MetricsProducer and ScalableNodeGroup. Field names are those of Karpenter v0.1 so that
// users' existing manifests apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.karpenter.sh
package v1alpha1
