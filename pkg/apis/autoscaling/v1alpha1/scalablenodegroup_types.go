package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// NodeGroupType names a cloud node group implementation.
// +kubebuilder:validation:Enum=AWSEC2AutoScalingGroup;AWSEKSNodeGroup
type NodeGroupType string

const (
	// AWSEC2AutoScalingGroup is an EC2 Auto Scaling group identified by name or ARN.
	AWSEC2AutoScalingGroup NodeGroupType = "AWSEC2AutoScalingGroup"
	// AWSEKSNodeGroup is an EKS managed node group identified by ARN or <cluster>/<nodegroup>.
	AWSEKSNodeGroup NodeGroupType = "AWSEKSNodeGroup"
)

// ScalableNodeGroupSpec is the desired size of a cloud node group.
type ScalableNodeGroupSpec struct {
	// Replicas is the desired number of nodes. When unset, the controller sets it to the node
	// group's desired size (and says so in an Adopted event), so that the scale subresource never
	// reports an unknown size. The apiserver refuses a negative value as it does for any scale
	// subresource (a schema minimum would report it a second time).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Type is the node group implementation; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable; create another ScalableNodeGroup to drive another node group"
	Type NodeGroupType `json:"type"`
	// ID identifies the node group within its type; immutable, so that an object granted one
	// group cannot be repointed at another.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="id is immutable; create another ScalableNodeGroup to drive another node group"
	ID string `json:"id"`
}

// ScalableNodeGroupStatus is the observed state of a node group.
type ScalableNodeGroupStatus struct {
	// Replicas is the number of nodes in service.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector is the label selector of the group's nodes, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Conditions: Ready, AbleToScale, Stabilized.
	// +optional
	Conditions apis.Conditions `json:"conditions,omitempty"`
}

// ScalableNodeGroup exposes the scale subresource over a cloud node group.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:path=scalablenodegroups,shortName=sng,categories=karpenter
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScalableNodeGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ScalableNodeGroupSpec   `json:"spec,omitempty"`
	Status ScalableNodeGroupStatus `json:"status,omitempty"`
}

// ScalableNodeGroupList is a list of ScalableNodeGroups.
// +kubebuilder:object:root=true
type ScalableNodeGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScalableNodeGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ScalableNodeGroup{}, &ScalableNodeGroupList{})
}
