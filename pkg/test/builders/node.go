package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOptions describe a node; zero fields are left out.
type NodeOptions struct {
	// Name defaults to a unique node-N.
	Name                string
	Labels, Annotations map[string]string
	Finalizers          []string
	Taints              []corev1.Taint
	// Unschedulable cordons the node.
	Unschedulable bool
	Allocatable   corev1.ResourceList
	// Capacity defaults to Allocatable.
	Capacity corev1.ResourceList
	// Ready, when set, is the status of the node's Ready condition.
	Ready corev1.ConditionStatus
}

// Node is a node as options describe it.
func Node(o NodeOptions) *corev1.Node {
	capacity := o.Capacity
	if capacity == nil {
		capacity = o.Allocatable.DeepCopy()
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name(o.Name, "node"), Labels: o.Labels, Annotations: o.Annotations, Finalizers: o.Finalizers},
		Spec:       corev1.NodeSpec{Taints: o.Taints, Unschedulable: o.Unschedulable},
		Status:     corev1.NodeStatus{Allocatable: o.Allocatable, Capacity: capacity},
	}
	if o.Ready != "" {
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: o.Ready}}
	}
	return node
}
