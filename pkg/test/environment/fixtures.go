package environment

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// KwokNodeAnnotation marks the nodes kwok manages: the environment starts kwok with
	// --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake, as kwokctl does.
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
	// defaultKwokNodePods is the pod capacity of a kwok node whose capacity names none, the
	// kubelet's default --max-pods.
	defaultKwokNodePods = 110
)

// KwokNode returns a Node for kwok to manage: once created (with Options.Kwok), kwok marks it
// Ready and runs the pods bound to it. labels are added to the well-known ones; capacity is
// both the node's capacity and its allocatable. Like kwokctl's nodes it carries no taint.
func KwokNode(name string, labels map[string]string, capacity corev1.ResourceList) *corev1.Node {
	nodeLabels := map[string]string{
		corev1.LabelHostname:   name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
		"type":                 "kwok",
	}
	for key, value := range labels {
		nodeLabels[key] = value
	}
	resources := capacity.DeepCopy()
	if resources == nil {
		resources = corev1.ResourceList{}
	}
	if _, ok := resources[corev1.ResourcePods]; !ok {
		resources[corev1.ResourcePods] = *resource.NewQuantity(defaultKwokNodePods, resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      nodeLabels,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			NodeInfo:    corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}
