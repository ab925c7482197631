package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// HorizontalAutoscalerSpec is the desired behaviour of a HorizontalAutoscaler.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="maxReplicas must be greater than or equal to minReplicas, which is 1 when not set",fieldPath=".maxReplicas"
type HorizontalAutoscalerSpec struct {
	// ScaleTargetRef points to the resource to scale: any kind in the same namespace that
	// serves the scale subresource.
	ScaleTargetRef CrossVersionObjectReference `json:"scaleTargetRef"`
	// MinReplicas is the lower limit for the number of replicas. Zero is allowed; the
	// default, as for the HorizontalPodAutoscaler, is 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the upper limit for the number of replicas.
	// +kubebuilder:validation:Minimum=0
	MaxReplicas int32 `json:"maxReplicas"`
	// Metrics are evaluated independently; the largest recommendation wins. At most 32
	// (MaxMetrics).
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Metrics []Metric `json:"metrics,omitempty"`
	// Behavior configures scaling up and down separately, as the HorizontalPodAutoscaler does.
	// +optional
	Behavior Behavior `json:"behavior,omitempty"`
}

// CrossVersionObjectReference identifies the scale target.
type CrossVersionObjectReference struct {
	// Kind of the referent, e.g. ScalableNodeGroup or Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name of the referent.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// APIVersion of the referent, e.g. autoscaling.karpenter.sh/v1alpha1 or apps/v1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
}

// Metric is one signal the autoscaler follows.
// +kubebuilder:validation:XValidation:rule="has(self.prometheus)",message="a metric must set prometheus"
type Metric struct {
	// Prometheus is a PromQL query and the value it should be held at.
	// +optional
	Prometheus *PrometheusMetricSource `json:"prometheus,omitempty"`
}

// MaxMetrics bounds a HorizontalAutoscaler's metrics, whose queries one evaluation runs in
// turn; the CRD's MaxItems marker on HorizontalAutoscalerSpec.Metrics repeats it.
const MaxMetrics = 32

// MaxQueryLength bounds a metric's PromQL query, in bytes; the CRD's MaxLength marker on
// PrometheusMetricSource.Query repeats it. A query that selects one series fits in far less.
const MaxQueryLength = 4096

// PrometheusMetricSource is an instant PromQL query that must evaluate to one sample.
type PrometheusMetricSource struct {
	// Query is a PromQL expression that evaluates to a scalar or a single-sample vector,
	// at most 4096 bytes long.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`
	// Target is the value the query should be held at.
	Target MetricTarget `json:"target"`
}

// MetricTargetType says how a metric value relates to replicas.
// +kubebuilder:validation:Enum=Value;AverageValue;Utilization
type MetricTargetType string

const (
	// ValueMetricType scales replicas by the ratio of the value to the target.
	ValueMetricType MetricTargetType = "Value"
	// AverageValueMetricType treats the value as a total to be divided by the target per replica.
	AverageValueMetricType MetricTargetType = "AverageValue"
	// UtilizationMetricType treats the value as a 0–1 ratio and the target as a percentage.
	UtilizationMetricType MetricTargetType = "Utilization"
)

// MetricTarget is the value a metric should be held at.
// +kubebuilder:validation:XValidation:rule="type(self.value) != string || !self.value.endsWith('%')",message="value is a number: for a Utilization of 70% write 70, a percentage without the % sign"
type MetricTarget struct {
	// Type is Value, AverageValue or Utilization.
	Type MetricTargetType `json:"type"`
	// Value's schema is written out rather than generated from resource.Quantity, whose pattern
	// would refuse "70%" with a regex beside the message of MetricTarget's rule.

	// Value is the target: a quantity for Value and AverageValue, a percentage for Utilization.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="type(self) == int || self.endsWith('%') || isQuantity(self)",messageExpression="'\"' + string(self) + '\" is not a quantity, such as 70, 0.5, 500m or 2Gi'"
	Value resource.Quantity `json:"value"`
}

// Behavior configures scale up and scale down separately.
type Behavior struct {
	// ScaleUp defaults to no stabilization and the larger of 100% or 4 replicas per 15s.
	// +optional
	ScaleUp *ScalingRules `json:"scaleUp,omitempty"`
	// ScaleDown defaults to a 300s stabilization window and 100% per 15s.
	// +optional
	ScaleDown *ScalingRules `json:"scaleDown,omitempty"`
}

// ScalingPolicySelect chooses among the policies of a direction.
// +kubebuilder:validation:Enum=Max;Min;Disabled
type ScalingPolicySelect string

const (
	// MaxPolicySelect picks the policy allowing the largest change.
	MaxPolicySelect ScalingPolicySelect = "Max"
	// MinPolicySelect picks the policy allowing the smallest change.
	MinPolicySelect ScalingPolicySelect = "Min"
	// DisabledPolicySelect forbids scaling in this direction.
	DisabledPolicySelect ScalingPolicySelect = "Disabled"
)

// ScalingRules configures one direction of scaling.
type ScalingRules struct {
	// StabilizationWindowSeconds is how far back recommendations are considered, to avoid flapping.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	StabilizationWindowSeconds *int32 `json:"stabilizationWindowSeconds,omitempty"`
	// SelectPolicy is Max (default), Min or Disabled.
	// +optional
	SelectPolicy *ScalingPolicySelect `json:"selectPolicy,omitempty"`
	// Policies limit the rate of change.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Policies []ScalingPolicy `json:"policies,omitempty"`
	// Tolerance is the fraction around a metric's target within which this direction does
	// not scale, e.g. 0.05 or "50m"; 0 follows every change. Defaults to the controller's
	// --horizontalautoscaler-tolerance (0.1), as the HorizontalPodAutoscaler's field does.
	// +optional
	Tolerance *resource.Quantity `json:"tolerance,omitempty"`
}

// ScalingPolicyType is the unit of a policy's value.
// +kubebuilder:validation:Enum=Count;Percent
type ScalingPolicyType string

const (
	// CountScalingPolicy limits the change to a number of replicas per period.
	CountScalingPolicy ScalingPolicyType = "Count"
	// PercentScalingPolicy limits the change to a percentage of replicas per period.
	PercentScalingPolicy ScalingPolicyType = "Percent"
)

// ScalingPolicy limits the change allowed within a period.
type ScalingPolicy struct {
	// Type is Count or Percent.
	Type ScalingPolicyType `json:"type"`
	// Value is the number of replicas or the percentage.
	// +kubebuilder:validation:Minimum=1
	Value int32 `json:"value"`
	// PeriodSeconds is the window over which the change is measured.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1800
	PeriodSeconds int32 `json:"periodSeconds"`
}

// HorizontalAutoscalerStatus is the observed state of a HorizontalAutoscaler.
type HorizontalAutoscalerStatus struct {
	// CurrentReplicas is the target's replica count as last observed; unset until the target
	// has been read, so that 0 always means zero replicas.
	// +optional
	CurrentReplicas *int32 `json:"currentReplicas,omitempty"`
	// DesiredReplicas is the replica count last computed; unset until the first decision.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	// LastScaleTime is when the target was last scaled.
	// +optional
	LastScaleTime *apis.VolatileTime `json:"lastScaleTime,omitempty"`
	// CurrentMetrics are the values last read for each metric.
	// +optional
	CurrentMetrics []MetricStatus `json:"currentMetrics,omitempty"`
	// Recommendations are recent raw recommendations, kept so that stabilization windows
	// survive a controller restart. Bounded by the longest window. The newest is a run: its
	// replicas have been recommended since its time, at every complete evaluation; each other
	// one's time is when its replicas were last recommended.
	// +optional
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	// ScaleEvents are recent changes made to the target, kept so that rate policies survive
	// a controller restart. Bounded by the longest policy period.
	// +optional
	ScaleEvents []ScaleEvent `json:"scaleEvents,omitempty"`
	// PendingScale is a write of the target's scale recorded before it is made, so that a
	// failure or a crash between that write and this status cannot forget the change. The
	// next evaluation settles it: counted among the scale events unless the target's spec
	// replicas are still From, dropped if they are.
	// +optional
	PendingScale *PendingScale `json:"pendingScale,omitempty"`
	// Conditions: Ready, Active, AbleToScale, ScalingUnbounded.
	// +optional
	Conditions apis.Conditions `json:"conditions,omitempty"`
}

// MetricStatus is the last value read for one metric.
type MetricStatus struct {
	// Prometheus is the query and its last value.
	// +optional
	Prometheus *PrometheusMetricStatus `json:"prometheus,omitempty"`
}

// PrometheusMetricStatus is the last value of a PromQL query.
type PrometheusMetricStatus struct {
	// Query is the PromQL expression.
	Query string `json:"query"`
	// Current is its last value.
	Current MetricValueStatus `json:"current"`
}

// MetricValueStatus is a metric value.
type MetricValueStatus struct {
	// Value is absent when the metric could not be read.
	// +optional
	Value *resource.Quantity `json:"value,omitempty"`
}

// Recommendation is one raw replica recommendation and when it was made.
type Recommendation struct {
	Time     metav1.Time `json:"time"`
	Replicas int32       `json:"replicas"`
}

// ScaleEvent is one change of the target's replicas: positive up, negative down.
type ScaleEvent struct {
	Time          metav1.Time `json:"time"`
	ReplicaChange int32       `json:"replicaChange"`
}

// PendingScale is a change of the target's spec replicas from From to To decided at Time,
// whose write to the target has not been confirmed yet.
type PendingScale struct {
	Time metav1.Time `json:"time"`
	From int32       `json:"from"`
	To   int32       `json:"to"`
}

// HorizontalAutoscaler scales any resource with a scale subresource from PromQL queries.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=horizontalautoscalers,shortName=ha,categories=karpenter
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.minReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.maxReplicas`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last-Scale-Time",type=date,JSONPath=`.status.lastScaleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HorizontalAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HorizontalAutoscalerSpec   `json:"spec,omitempty"`
	Status HorizontalAutoscalerStatus `json:"status,omitempty"`
}

// HorizontalAutoscalerList is a list of HorizontalAutoscalers.
// +kubebuilder:object:root=true
type HorizontalAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HorizontalAutoscaler `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HorizontalAutoscaler{}, &HorizontalAutoscalerList{})
}
