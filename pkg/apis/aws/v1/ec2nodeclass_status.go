package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an EC2NodeClass. Ready is True once all the others are.
const (
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypePlacementGroupReady       = "PlacementGroupReady"
	// ConditionTypeValidationSucceeded is False while the class holds something its schema
	// could not refuse but Karpenter cannot act on; the message says what.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	ConditionTypeReady               = "Ready"
)

// EC2NodeClassStatus is what the class's selectors resolved to: launches use only these.
type EC2NodeClassStatus struct {
	// Subnets the subnet selectors resolved to.
	// +listType=atomic
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups the security group selectors resolved to.
	// +listType=atomic
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations the capacity reservation selectors resolved to.
	// +listType=atomic
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs the AMI selectors resolved to, each with the requirements (architecture, ...) of
	// the instance types it boots.
	// +listType=atomic
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile nodes launch with: the one Karpenter created for
	// the role, or spec.instanceProfile.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions: SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady,
	// CapacityReservationsReady, PlacementGroupReady, ValidationSucceeded and Ready, with the
	// reason of each.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a subnet a selector resolved to.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone of the subnet (us-west-2a).
	// +required
	Zone string `json:"zone"`
	// ZoneID of the subnet (usw2-az1).
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a security group a selector resolved to.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is an AMI a selector resolved to.
type AMI struct {
	// ID of the AMI.
	// +required
	ID string `json:"id"`
	// Deprecated is true for an AMI past its deprecation time, used only while no other
	// matches.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type must meet to boot the AMI (its architecture, GPUs, ...).
	// +listType=atomic
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// CapacityReservation is a capacity reservation a selector resolved to.
type CapacityReservation struct {
	// AvailabilityZone of the reservation.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// EndTime is when the reservation expires and its capacity is released.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// ID of the reservation.
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// InstanceMatchCriteria of the reservation: open or targeted.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// InstanceType the reservation is for.
	// +required
	InstanceType string `json:"instanceType"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// ReservationType is default (an On-Demand Capacity Reservation) or capacity-block.
	// +kubebuilder:validation:Enum:={default,capacity-block}
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// Interruptible says EC2 may reclaim the reservation's capacity.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
	// State of the reservation: active, or expiring once within EC2's reclaim window (Capacity
	// Blocks only).
	// +kubebuilder:validation:Enum:={active,expiring}
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
}

// CapacityReservationType is the kind of a capacity reservation.
type CapacityReservationType string

// Capacity reservation types.
const (
	CapacityReservationTypeDefault       CapacityReservationType = "default"
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is where a capacity reservation is in its life.
type CapacityReservationState string

// Capacity reservation states.
const (
	CapacityReservationStateActive   CapacityReservationState = "active"
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)

// TerminationFinalizer holds an EC2NodeClass until the NodeClaims that name it are gone and the
// instance profile Karpenter created for its role is deleted.
const TerminationFinalizer = "karpenter.k8s.aws/termination"
