package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint is a Kubernetes node taint with the schema upstream Karpenter validates it by (a key
// and value the Node API would accept, one of the three effects), so that a taint the node
// would refuse is refused when the object is written, not when the node registers.
type Taint struct {
	// Key of the taint: a qualified name, as the Node API requires.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +required
	Key string `json:"key"`
	// Value of the taint: at most 63 characters, as the Node API requires.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +optional
	Value string `json:"value,omitempty"`
	// Effect on pods that do not tolerate the taint.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +required
	Effect corev1.TaintEffect `json:"effect"`
	// TimeAdded is when a NoExecute taint was added.
	// +optional
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// Core is the taint as the Node API has it.
func (t Taint) Core() corev1.Taint {
	return corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect, TimeAdded: t.TimeAdded}
}

// CoreTaints are the taints as the Node API has them.
func CoreTaints(taints []Taint) []corev1.Taint {
	if taints == nil {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		out[i] = t.Core()
	}
	return out
}

// TaintsFrom are the Node API's taints in this API's type.
func TaintsFrom(taints []corev1.Taint) []Taint {
	if taints == nil {
		return nil
	}
	out := make([]Taint, len(taints))
	for i, t := range taints {
		out[i] = Taint{Key: t.Key, Value: t.Value, Effect: t.Effect, TimeAdded: t.TimeAdded}
	}
	return out
}
