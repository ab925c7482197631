package v1alpha5

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"knative.dev/pkg/apis"
)

// ProvisionerSpec constrains the nodes a Provisioner launches.
type ProvisionerSpec struct {
	// Labels are set on every node launched. The provisioner-name label is set by Karpenter and
	// hostnames are assigned by the node, so neither may be given here. They are also the
	// kubelet's --node-labels, and the kubelet refuses to start with a label in the
	// kubernetes.io or k8s.io namespaces other than those under kubelet.kubernetes.io/ and
	// node.kubernetes.io/ and those it sets itself (e.g. topology.kubernetes.io/region), so no
	// other may be given either: node-role.kubernetes.io/worker would keep every node from
	// joining.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?(kubernetes|k8s)[.]io/') || k.matches('^([^/]*[.])?(kubelet|node)[.]kubernetes[.]io/') || k in ['beta.kubernetes.io/arch', 'beta.kubernetes.io/instance-type', 'beta.kubernetes.io/os', 'failure-domain.beta.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/zone', 'kubernetes.io/arch', 'kubernetes.io/hostname', 'kubernetes.io/os', 'node.kubernetes.io/instance-type', 'topology.kubernetes.io/region', 'topology.kubernetes.io/zone'])",messageExpression="'the kubelet refuses to register a node with label ' + self.filter(k, k.matches('^([^/]*[.])?(kubernetes|k8s)[.]io/') && !k.matches('^([^/]*[.])?(kubelet|node)[.]kubernetes[.]io/') && !(k in ['beta.kubernetes.io/arch', 'beta.kubernetes.io/instance-type', 'beta.kubernetes.io/os', 'failure-domain.beta.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/zone', 'kubernetes.io/arch', 'kubernetes.io/hostname', 'kubernetes.io/os', 'node.kubernetes.io/instance-type', 'topology.kubernetes.io/region', 'topology.kubernetes.io/zone']))[0] + ': in the kubernetes.io and k8s.io namespaces it takes only labels under kubelet.kubernetes.io/ and node.kubernetes.io/ and those it sets itself'"
	// +kubebuilder:validation:XValidation:rule="!('karpenter.sh/provisioner-name' in self)",message="label karpenter.sh/provisioner-name is set by Karpenter"
	// +kubebuilder:validation:XValidation:rule="!('kubernetes.io/hostname' in self)",message="label kubernetes.io/hostname is set by the node"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['node.kubernetes.io/instance-type', 'topology.kubernetes.io/zone', 'kubernetes.io/arch', 'kubernetes.io/os', 'karpenter.sh/capacity-type']))",message="well-known labels are constrained through requirements, not labels"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are set on every node launched; only pods that tolerate them are provisioned for.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.key.size() > 0)",message="taint key must not be empty"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Requirements constrain the well-known labels of launched nodes, and so the instance
	// types, zones, architectures, operating systems and capacity types Karpenter may choose.
	// +kubebuilder:validation:MaxItems=30
	// +optional
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
	// Provider is cloud-provider specific configuration, validated by the cloud provider.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Provider *runtime.RawExtension `json:"provider,omitempty"`
	// TTLSecondsAfterEmpty is how long a node may run without pods (daemonset pods aside)
	// before it is removed. Unset, empty nodes are kept. Not applied while consolidation is
	// enabled, which then decides on empty nodes too (admitted with a warning).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self <= 9223372036",message="must be at most 9223372036 seconds (about 292 years), the longest duration Karpenter can represent"
	// +optional
	TTLSecondsAfterEmpty *int64 `json:"ttlSecondsAfterEmpty,omitempty"`
	// TTLSecondsUntilExpired is how long a node may live before it is replaced. Unset, nodes
	// do not expire.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self <= 9223372036",message="must be at most 9223372036 seconds (about 292 years), the longest duration Karpenter can represent"
	// +optional
	TTLSecondsUntilExpired *int64 `json:"ttlSecondsUntilExpired,omitempty"`
	// TerminationGracePeriodSeconds bounds how long a node's drain may take once the node is
	// deleted: past it, the pods still on the node are deleted rather than evicted, whatever
	// their PodDisruptionBudgets and do-not-evict annotations say, and the instance is
	// terminated. Unset, a drain waits for as long as evictions are refused.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self <= 9223372036",message="must be at most 9223372036 seconds (about 292 years), the longest duration Karpenter can represent"
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Limits bound the total capacity of the nodes this Provisioner launches.
	// +optional
	Limits *Limits `json:"limits,omitempty"`
	// Consolidation lets Karpenter delete this Provisioner's nodes whose pods fit elsewhere and
	// replace them with cheaper ones. Unset, as in Karpenter v0.5, it does not.
	// +optional
	Consolidation *Consolidation `json:"consolidation,omitempty"`
}

// Consolidation configures how Karpenter removes and replaces a Provisioner's nodes to lower
// their cost.
type Consolidation struct {
	// Enabled turns consolidation on for this Provisioner's nodes, the empty ones included:
	// ttlSecondsAfterEmpty is then not applied.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Budget is the most of this Provisioner's nodes consolidation disrupts at once: a
	// number, or a percentage of its nodes rounded up. Nodes being deleted, for any reason,
	// count against it. 10% when unset.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+%$') && int(self.replace('%', '')) <= 100",message="budget must be a non-negative number of nodes or a percentage from 0% to 100%"
	// +optional
	Budget *intstr.IntOrString `json:"budget,omitempty"`
}

// DefaultConsolidationBudget is the budget of a Provisioner that sets none.
var DefaultConsolidationBudget = intstr.FromString("10%")

// ConsolidationEnabled is whether Karpenter consolidates the Provisioner's nodes.
func (p *Provisioner) ConsolidationEnabled() bool {
	return p.Spec.Consolidation != nil && p.Spec.Consolidation.Enabled != nil && *p.Spec.Consolidation.Enabled
}

// NodeSelectorOperator is the relation a requirement asserts between a label and its values.
// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
type NodeSelectorOperator string

// NodeSelectorRequirement constrains one well-known node label, with the semantics of a
// Kubernetes node selector requirement.
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && self.values.size() > 0)",message="operators In and NotIn require at least one value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || self.values.size() == 0",message="operators Exists and DoesNotExist take no values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || (has(self.values) && self.values.size() == 1 && self.values[0].matches('^-?[0-9]+$'))",message="operators Gt and Lt require exactly one integer value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || !(self.key in ['node.kubernetes.io/instance-type', 'topology.kubernetes.io/zone', 'kubernetes.io/arch', 'kubernetes.io/os', 'karpenter.sh/capacity-type'])",message="operators Gt and Lt compare integers, and no well-known label takes integer values"
// +kubebuilder:validation:XValidation:rule="self.key != 'karpenter.sh/capacity-type' || !has(self.values) || self.values.all(v, v in ['spot', 'on-demand'])",messageExpression="'karpenter.sh/capacity-type values must be spot or on-demand, got ' + self.values.join(', ')"
// +kubebuilder:validation:XValidation:rule="self.key != 'kubernetes.io/arch' || !has(self.values) || self.values.all(v, v in ['386', 'amd64', 'arm', 'arm64', 'ppc64le', 'riscv64', 's390x'])",messageExpression="'kubernetes.io/arch values must be GOARCH names (386, amd64, arm, arm64, ppc64le, riscv64, s390x), got ' + self.values.join(', ')"
// +kubebuilder:validation:XValidation:rule="self.key != 'kubernetes.io/os' || !has(self.values) || self.values.all(v, v in ['linux', 'windows'])",messageExpression="'kubernetes.io/os values must be linux or windows, got ' + self.values.join(', ')"
type NodeSelectorRequirement struct {
	// Key is a well-known node label.
	// +kubebuilder:validation:Enum=node.kubernetes.io/instance-type;topology.kubernetes.io/zone;kubernetes.io/arch;kubernetes.io/os;karpenter.sh/capacity-type
	Key string `json:"key"`
	// Operator relates the label to Values.
	Operator NodeSelectorOperator `json:"operator"`
	// Values the operator applies to.
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// Limits bound the resources a Provisioner may launch.
type Limits struct {
	// Resources is the maximum total capacity, per resource, of the nodes launched.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// ProvisionerStatus is the observed state of a Provisioner.
type ProvisionerStatus struct {
	// Resources is the total capacity of the nodes this Provisioner has launched and that
	// still exist; it is what counts against spec.limits.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// LastScaleTime is when this Provisioner last launched a node.
	// +optional
	LastScaleTime *apis.VolatileTime `json:"lastScaleTime,omitempty"`
	// Conditions: Ready.
	// +optional
	Conditions apis.Conditions `json:"conditions,omitempty"`
}

// Provisioner launches nodes for pods that cannot be scheduled on existing capacity.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=provisioners,scope=Cluster,categories=karpenter
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="name must be at most 63 characters, as it is a label value on nodes"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Provisioner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProvisionerSpec   `json:"spec,omitempty"`
	Status ProvisionerStatus `json:"status,omitempty"`
}

// ProvisionerList is a list of Provisioners.
// +kubebuilder:object:root=true
type ProvisionerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provisioner `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provisioner{}, &ProvisionerList{})
}
