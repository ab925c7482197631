package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlaySpec is which instance types an overlay applies to and what it changes of them.
type NodeOverlaySpec struct {
	// Requirements select the instance types, as offered to a NodePool, the overlay applies
	// to: by their well-known labels (node.kubernetes.io/instance-type,
	// karpenter.k8s.aws/instance-family, karpenter.sh/capacity-type, karpenter.sh/nodepool, ...)
	// or by the labels of a NodePool's template.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'NotIn' must have a value defined",rule="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirement keys must be qualified names: at most 253 characters before the '/', at most 63 after it",rule="self.all(x, x.key.size() - x.key.lastIndexOf('/') <= 64 && x.key.lastIndexOf('/') <= 253)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// PriceAdjustment changes the price of the instance types it matches: by an amount
	// (+0.5, -0.25) or a percentage (+10%, -15%, at least -100%).
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the price of the instance types it matches, per hour, as a decimal
	// number in a string ("5.00").
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources (hugepages-2Mi, example.com/device, nvidia.com/gpu on
	// fractional GPUs, ...) to the instance types it matches; the resources an instance type
	// reports itself (cpu, memory, ephemeral-storage, pods, and AWS's pod ENIs, EFA, Neuron and
	// Gaudi devices) cannot be overridden.
	// +kubebuilder:validation:XValidation:message="capacity may only add extended resources: cpu, memory, ephemeral-storage and pods come from the instance type",rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"
	// +kubebuilder:validation:XValidation:message="capacity may only add extended resources: vpc.amazonaws.com/pod-eni, vpc.amazonaws.com/efa, aws.amazon.com/neuron, aws.amazon.com/neuroncore and habana.ai/gaudi come from the instance type",rule="self.all(x, !(x in ['vpc.amazonaws.com/pod-eni', 'vpc.amazonaws.com/efa', 'aws.amazon.com/neuron', 'aws.amazon.com/neuroncore', 'habana.ai/gaudi']))"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that match the same instance type: the highest applies its price
	// first, and its capacity wins on the same resource; equal weights go by name. Unset counts
	// as 0.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is a requirement on an instance type's label.
type NodeSelectorRequirement struct {
	// Key is the label the requirement constrains.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted: of its labels only karpenter.sh/capacity-type and karpenter.sh/nodepool may be required",rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted: overlays apply to instance types, not nodes",rule="self != 'kubernetes.io/hostname'"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted: only its well-known labels may be required, karpenter.k8s.aws/ followed by one of instance-encryption-in-transit-supported, instance-category, instance-hypervisor, instance-family, instance-generation, instance-local-nvme, instance-size, instance-cpu, instance-cpu-manufacturer, instance-cpu-sustained-clock-speed-mhz, instance-memory, instance-ebs-bandwidth, instance-network-bandwidth, instance-gpu-name, instance-gpu-manufacturer, instance-gpu-count, instance-gpu-memory, instance-accelerator-name, instance-accelerator-manufacturer, instance-accelerator-count, instance-capability-flex",rule="self in ['karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex'] || !self.find('^([^/]+)').endsWith('karpenter.k8s.aws')"
	// +required
	Key string `json:"key"`
	// Operator relates the label to Values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values the operator applies to: at least one for In and NotIn, none for Exists and
	// DoesNotExist, one integer for Gt, Lt, Gte and Lte.
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// NodeOverlay changes what scheduling believes of the instance types it matches: their price,
// which orders the choice between them, and extended resources they offer. Behind the
// NodeOverlay feature gate, as upstream's alpha.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:message="cannot set both 'price' and 'priceAdjustment'",rule="!has(self.price) || !has(self.priceAdjustment)"
	// +required
	Spec   NodeOverlaySpec   `json:"spec"`
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeOverlay{}, &NodeOverlayList{})
}
