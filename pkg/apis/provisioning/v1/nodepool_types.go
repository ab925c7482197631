package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolSpec is what a NodePool lets Karpenter launch for pending pods, how it may disrupt
// those nodes, and how much of them there may be.
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="a NodePool cannot change between static (replicas set) and dynamic (replicas unset): create another NodePool instead"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || self.limits.all(k, k == 'nodes')",message="a static NodePool (replicas set) takes only limits.nodes: remove the other limits"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="a static NodePool (replicas set) takes no weight: remove weight"
type NodePoolSpec struct {
	// Template is what every NodeClaim of the NodePool starts from; pods narrow it further.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption is how and how fast Karpenter may remove the NodePool's nodes.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits bound the sum of the resources of the NodePool's nodes (cpu, memory, nvidia.com/gpu,
	// ...) and, as `nodes`, their number: no node is launched that would exceed one. Only
	// `nodes` is allowed when replicas is set.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders the NodePools a pod could use: the highest first. Unset counts as 0.
	// Not allowed when replicas is set.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the NodePool static: it keeps this many nodes whatever the pods, instead of
	// launching for pending pods. consolidationPolicy and consolidateAfter do not apply to it.
	// Upstream's alpha feature.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// Limits are upper bounds of the NodePool's resources; `nodes` bounds the number of nodes.
type Limits corev1.ResourceList

// LimitNodes is the key of Limits that bounds the number of nodes.
const LimitNodes corev1.ResourceName = "nodes"

// NodeClaimTemplate is the metadata and spec every NodeClaim of a NodePool starts from.
type NodeClaimTemplate struct {
	// Metadata of the nodes: labels and annotations every node gets.
	// +optional
	NodeClaimTemplateObjectMeta `json:"metadata,omitempty"`
	// Spec is what the nodes must be.
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// NodeClaimTemplateObjectMeta is the metadata a NodePool gives its NodeClaims and nodes.
type NodeClaimTemplateObjectMeta struct {
	// Labels are set on every node, and pods may select them. Keys of the karpenter.sh and
	// karpenter.k8s.aws domains are Karpenter's, except their well-known labels; so is
	// kubernetes.io/hostname.
	// +kubebuilder:validation:MaxProperties:=100
	// +kubebuilder:validation:XValidation:message="label keys must be qualified names: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit",rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$') && k.size() - k.lastIndexOf('/') <= 64 && k.lastIndexOf('/') <= 253)"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted: of its labels only karpenter.sh/capacity-type may be set; use a domain of your own",rule="self.all(k, k == 'karpenter.sh/capacity-type' || !k.find('^([^/]+)').endsWith('karpenter.sh'))"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted: every node has its own",rule="self.all(k, k != 'kubernetes.io/hostname')"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted: only its well-known labels may be set, karpenter.k8s.aws/ followed by one of instance-tenancy, capacity-reservation-type, capacity-reservation-id, capacity-reservation-interruptible, instance-encryption-in-transit-supported, instance-category, instance-hypervisor, instance-family, instance-generation, instance-local-nvme, instance-size, instance-cpu, instance-cpu-manufacturer, instance-cpu-sustained-clock-speed-mhz, instance-memory, instance-ebs-bandwidth, instance-network-bandwidth, instance-gpu-name, instance-gpu-manufacturer, instance-gpu-count, instance-gpu-memory, instance-accelerator-name, instance-accelerator-manufacturer, instance-accelerator-count, instance-capability-flex, placement-group-id, placement-group-partition",rule="self.all(k, k in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !k.find('^([^/]+)').endsWith('karpenter.k8s.aws'))"
	// +mapType=atomic
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`
	// Annotations are set on every node.
	// +mapType=granular
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LabelValue is the value of a node label: empty or at most 63 letters, digits, '-', '_' or '.'
// that start and end with a letter or digit. Its own type so that the schema bounds it.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// NodeClaimTemplateSpec is the part of a NodeClaim's spec a NodePool decides; the resources
// come from the pods each NodeClaim is launched for.
// +kubebuilder:validation:XValidation:message="a taint key and effect may not be both in taints and in startupTaints",rule="!has(self.taints) || !has(self.startupTaints) || self.taints.all(t, self.startupTaints.all(u, u.key != t.key || u.effect != t.effect))"
type NodeClaimTemplateSpec struct {
	// Taints are set on every node; pods must tolerate them.
	// +kubebuilder:validation:MaxItems:=50
	// +kubebuilder:validation:XValidation:message="taint keys must be qualified names: at most 253 characters before the '/', at most 63 after it",rule="self.all(t, t.key.size() - t.key.lastIndexOf('/') <= 64 && t.key.lastIndexOf('/') <= 253)"
	// +kubebuilder:validation:XValidation:message="a taint key and effect may appear only once",rule="self.all(t, self.exists_one(u, u.key == t.key && u.effect == t.effect))"
	// +listType=atomic
	// +optional
	Taints []Taint `json:"taints,omitempty"`
	// StartupTaints are set on every node when it registers and expected to be removed by
	// another component (a DaemonSet, typically) once the node is ready for pods; pods need not
	// tolerate them to get a node.
	// +kubebuilder:validation:MaxItems:=50
	// +kubebuilder:validation:XValidation:message="taint keys must be qualified names: at most 253 characters before the '/', at most 63 after it",rule="self.all(t, t.key.size() - t.key.lastIndexOf('/') <= 64 && t.key.lastIndexOf('/') <= 253)"
	// +kubebuilder:validation:XValidation:message="a taint key and effect may appear only once",rule="self.all(t, self.exists_one(u, u.key == t.key && u.effect == t.effect))"
	// +listType=atomic
	// +optional
	StartupTaints []Taint `json:"startupTaints,omitempty"`
	// Requirements are what every node's labels must satisfy: the instance types, zones,
	// capacity types and any other label the NodePool allows. Pods narrow them further.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements with 'minValues' must have at least that many values specified in the 'values' field",rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)"
	// +kubebuilder:validation:XValidation:message="label \"karpenter.sh/nodepool\" is restricted: Karpenter sets it to the NodePool's name",rule="self.all(x, x.key != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted: only its well-known labels may be required, karpenter.k8s.aws/ followed by one of instance-tenancy, capacity-reservation-type, capacity-reservation-id, capacity-reservation-interruptible, instance-encryption-in-transit-supported, instance-category, instance-hypervisor, instance-family, instance-generation, instance-local-nvme, instance-size, instance-cpu, instance-cpu-manufacturer, instance-cpu-sustained-clock-speed-mhz, instance-memory, instance-ebs-bandwidth, instance-network-bandwidth, instance-gpu-name, instance-gpu-manufacturer, instance-gpu-count, instance-gpu-memory, instance-accelerator-name, instance-accelerator-manufacturer, instance-accelerator-count, instance-capability-flex, placement-group-id, placement-group-partition",rule="self.all(x, x.key in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !x.key.find('^([^/]+)').endsWith('karpenter.k8s.aws'))"
	// +kubebuilder:validation:XValidation:message="requirement keys must be qualified names: at most 253 characters before the '/', at most 63 after it",rule="self.all(x, x.key.size() - x.key.lastIndexOf('/') <= 64 && x.key.lastIndexOf('/') <= 253)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef names the EC2NodeClass that holds the cloud's configuration of the nodes.
	// Its group and kind cannot change; its name can.
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="nodeClassRef.group is immutable: create another NodePool to use another group"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="nodeClassRef.kind is immutable: create another NodePool to use another kind"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds a node's drain once it is deleted: past it, the pods still
	// there are deleted whatever their PodDisruptionBudgets and do-not-disrupt annotations say,
	// and pods are deleted early enough to get their own terminationGracePeriodSeconds. Unset,
	// a drain waits as long as evictions are refused.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long after its creation a node is replaced, or Never.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// Disruption is how Karpenter may remove a NodePool's nodes: which ones consolidation may
// take, after how long, and how many at a time.
type Disruption struct {
	// ConsolidateAfter is how long a node must have seen no pod arrive or leave before
	// consolidation considers it, or Never to disable consolidation.
	// +kubebuilder:default:="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitempty"`
	// ConsolidationPolicy is which nodes consolidation may remove or replace: WhenEmpty, only
	// nodes without workload pods; WhenEmptyOrUnderutilized, also nodes whose pods fit
	// elsewhere or on a cheaper node; Balanced, those too when the share of the NodePool's cost
	// a consolidation saves is at least half the share of its disruption cost it causes.
	// +kubebuilder:default:="WhenEmptyOrUnderutilized"
	// +kubebuilder:validation:Enum:=WhenEmpty;WhenEmptyOrUnderutilized;Balanced
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// SavingsThreshold is how much of the nodes' hourly price replacing underutilized nodes by a
	// cheaper one must save, as a percentage ("10%"), so that consolidation does not churn a
	// fleet for pennies; "0%" replaces for any saving, as upstream Karpenter. Unset, the
	// controller's --consolidation-threshold. Deleting nodes whose pods fit elsewhere saves their
	// whole price. This project's addition to upstream's schema.
	// +kubebuilder:validation:Pattern:="^(100|[0-9]{1,2})%$"
	// +optional
	SavingsThreshold *string `json:"savingsThreshold,omitempty"`
	// Budgets bound how many of the NodePool's nodes may be disrupted at once; the most
	// restrictive active budget applies. Unset, one budget of 10%.
	// +kubebuilder:validation:XValidation:message="'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +kubebuilder:validation:XValidation:message="'timeZone' is set only with 'schedule'",rule="self.all(x, !has(x.timeZone) || has(x.schedule))"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems:=50
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget bounds how many nodes may be disrupted at once, for some reasons, at some times.
type Budget struct {
	// Reasons the budget applies to: Underutilized, Empty, Drifted. Unset, every reason.
	// +kubebuilder:validation:MaxItems:=50
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is how many nodes may be disrupted at once: a number ("5") or a percentage of the
	// NodePool's nodes ("10%"), rounded up.
	// +kubebuilder:validation:Pattern:="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:default:="10%"
	// +required
	Nodes string `json:"nodes"`
	// Schedule is when the budget starts being active, in cron syntax ("0 9 * * mon-fri",
	// "@daily"), in UTC unless timeZone says otherwise; set with duration. Unset, the budget is
	// always active.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget stays active after each time its schedule hits, in hours
	// and minutes ("8h", "30m", "1h30m"); set with schedule.
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type=string
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// TimeZone is the IANA time zone the schedule is read in ("Europe/Berlin"), daylight saving
	// included; unset, UTC. This project's addition to upstream's schema.
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`
}

// ConsolidationPolicy is which nodes consolidation may remove or replace.
type ConsolidationPolicy string

// Consolidation policies.
const (
	ConsolidationPolicyWhenEmpty                ConsolidationPolicy = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	ConsolidationPolicyBalanced                 ConsolidationPolicy = "Balanced"
)

// DisruptionReason is why Karpenter disrupts a node, as a budget names it.
// +kubebuilder:validation:Enum=Underutilized;Empty;Drifted
type DisruptionReason string

// Disruption reasons.
const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
)

// NodePool is a set of nodes Karpenter may launch for pending pods: what they may be
// (template), how they are disrupted, and how much of them there may be. Each node it launches
// is a NodeClaim labelled karpenter.sh/nodepool with its name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.nodes"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodePool{}, &NodePoolList{})
}
