package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// MetricsProducerSpec selects exactly one kind of signal to compute.
// +kubebuilder:validation:XValidation:rule="[has(self.pendingCapacity), has(self.reservedCapacity), has(self.queue), has(self.scheduleSpec)].filter(x, x).size() == 1",message="exactly one of pendingCapacity, reservedCapacity, queue or scheduleSpec must be set"
type MetricsProducerSpec struct {
	// PendingCapacity reports how many more nodes of a group would let pending pods run.
	// +optional
	PendingCapacity *PendingCapacitySpec `json:"pendingCapacity,omitempty"`
	// ReservedCapacity reports requests against allocatable over a group of nodes.
	// +optional
	ReservedCapacity *ReservedCapacitySpec `json:"reservedCapacity,omitempty"`
	// Queue reports the length and the age of the oldest message of a queue.
	// +optional
	Queue *QueueSpec `json:"queue,omitempty"`
	// ScheduleSpec reports a replica count that follows a weekly or yearly schedule.
	// +optional
	ScheduleSpec *ScheduleSpec `json:"scheduleSpec,omitempty"`
}

// PendingCapacitySpec selects the node group whose shape pending pods are packed onto.
type PendingCapacitySpec struct {
	// NodeSelector identifies the node group by a label its nodes carry.
	// +kubebuilder:validation:MinProperties=1
	NodeSelector map[string]string `json:"nodeSelector"`
	// NodeTemplate describes the group's nodes for when it has none, so that pending pods
	// can still be packed and the group scaled up from zero. While the group has nodes,
	// their shape is used and the template is ignored.
	// +optional
	NodeTemplate *NodeTemplate `json:"nodeTemplate,omitempty"`
}

// NodeTemplate is the shape of a node the group would add: what a pod's scheduling
// constraints are checked against and what its requests are packed into.
// +kubebuilder:validation:XValidation:rule="size(self.allocatable) > 0",message="allocatable must name at least one resource"
type NodeTemplate struct {
	// Labels the group's nodes carry besides those of nodeSelector, e.g.
	// kubernetes.io/arch or topology.kubernetes.io/zone.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taints the group's nodes carry; only pods that tolerate them are counted.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Allocatable is what a node of the group offers to pods once system reservations and
	// DaemonSet pods are taken out, e.g. {cpu: "3800m", memory: "14Gi", pods: "58"}.
	// A resource left out is one the nodes do not offer.
	Allocatable corev1.ResourceList `json:"allocatable"`
}

// ReservedCapacitySpec selects the node group whose reservations are reported.
type ReservedCapacitySpec struct {
	// NodeSelector identifies the node group by exactly one label its nodes carry.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=1
	NodeSelector map[string]string `json:"nodeSelector"`
}

// QueueType names a queue implementation.
// +kubebuilder:validation:Enum=AWSSQSQueue
type QueueType string

// AWSSQSQueueType is an Amazon SQS queue identified by its ARN or URL.
const AWSSQSQueueType QueueType = "AWSSQSQueue"

// QueueSpec identifies a queue.
type QueueSpec struct {
	// Type is the queue implementation.
	Type QueueType `json:"type"`
	// ID is the queue's ARN or URL.
	// +kubebuilder:validation:MinLength=1
	ID string `json:"id"`
}

// ScheduleSpec is a default replica count overridden by behaviors during their windows.
type ScheduleSpec struct {
	// Timezone is an IANA time zone name, e.g. America/Los_Angeles. Defaults to UTC.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Timezone *string `json:"timezone,omitempty"`
	// DefaultReplicas is the value when no behavior is active.
	// +kubebuilder:validation:Minimum=0
	DefaultReplicas int32 `json:"defaultReplicas"`
	// Behaviors are evaluated in order; the first active one wins.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Behaviors []ScheduledBehavior `json:"behaviors,omitempty"`
}

// ScheduledBehavior holds Replicas from each match of Start until the next match of End.
type ScheduledBehavior struct {
	// Replicas is the value while this behavior is active.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// Start is when the behavior becomes active.
	Start *Pattern `json:"start"`
	// End is when the behavior stops being active. Without it the behavior stays active
	// from its first start on.
	// +optional
	End *Pattern `json:"end,omitempty"`
}

// Pattern is a strongly typed crontab. Omitted minutes and hours mean 0; omitted days,
// months and weekdays mean any. Each field takes numbers, ranges (a-b), steps (*/n) and
// comma lists; months and weekdays also take names, case-insensitively.
type Pattern struct {
	// +kubebuilder:validation:MinLength=1
	// +optional
	Minutes *string `json:"minutes,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +optional
	Hours *string `json:"hours,omitempty"`
	// Days of the month, 1-31.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Days *string `json:"days,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +optional
	Months *string `json:"months,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +optional
	Weekdays *string `json:"weekdays,omitempty"`
}

// MetricsProducerStatus is the last computed value of a MetricsProducer.
type MetricsProducerStatus struct {
	// PendingCapacity is set by a pendingCapacity producer.
	// +optional
	PendingCapacity *PendingCapacityStatus `json:"pendingCapacity,omitempty"`
	// ReservedCapacity maps a resource to its reservation, e.g. cpu: "62.50%, 10/16".
	// +optional
	ReservedCapacity map[corev1.ResourceName]string `json:"reservedCapacity,omitempty"`
	// Queue is set by a queue producer.
	// +optional
	Queue *QueueStatus `json:"queue,omitempty"`
	// ScheduledCapacity is set by a scheduleSpec producer.
	// +optional
	ScheduledCapacity *ScheduledCapacityStatus `json:"scheduledCapacity,omitempty"`
	// Conditions: Ready, Calculable.
	// +optional
	Conditions apis.Conditions `json:"conditions,omitempty"`
}

// PendingCapacityStatus counts pods waiting for the group and the nodes they need.
type PendingCapacityStatus struct {
	// Pods is the number of unschedulable pods that fit the group's node shape.
	Pods int32 `json:"pods"`
	// Nodes is how many more nodes of the group would let those pods run.
	Nodes int32 `json:"nodes"`
}

// QueueStatus is the last reading of a queue.
type QueueStatus struct {
	// Length is the approximate number of visible messages.
	Length int64 `json:"length"`
	// OldestMessageAgeSeconds is the approximate age of the oldest message.
	// +optional
	OldestMessageAgeSeconds *int64 `json:"oldestMessageAgeSeconds,omitempty"`
}

// ScheduledCapacityStatus is the schedule's value now and its next change.
type ScheduledCapacityStatus struct {
	// CurrentValue is the replica count the schedule gives now.
	// +optional
	CurrentValue *int32 `json:"currentValue,omitempty"`
	// NextValueTime is the next instant the value changes; absent when it never does.
	// +optional
	NextValueTime *metav1.Time `json:"nextValueTime,omitempty"`
	// NextValue is the value from NextValueTime on.
	// +optional
	NextValue *int32 `json:"nextValue,omitempty"`
}

// MetricsProducer computes a signal and exports it as Prometheus gauges.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=metricsproducers,shortName=mp,categories=karpenter
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MetricsProducer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MetricsProducerSpec   `json:"spec,omitempty"`
	Status MetricsProducerStatus `json:"status,omitempty"`
}

// MetricsProducerList is a list of MetricsProducers.
// +kubebuilder:object:root=true
type MetricsProducerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MetricsProducer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MetricsProducer{}, &MetricsProducerList{})
}
