// Package builders makes the Kubernetes and Karpenter objects tests feed to the code under test
// or create in a cluster. Each builder takes an options struct whose zero fields keep the
// object minimal; objects given no name get a unique, deterministic one.
package builders

import (
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// PauseImage is the image of the containers builders make: it runs anywhere and does nothing.
const PauseImage = "registry.k8s.io/pause:3.10"

// sequence numbers the generated names; a counter rather than randomness keeps tests repeatable.
var sequence atomic.Int64

// name is given, or kind-N for the next N.
func name(given, kind string) string {
	if given != "" {
		return given
	}
	return fmt.Sprintf("%s-%d", kind, sequence.Add(1))
}

// namespace is given, or "default".
func namespace(given string) string {
	if given != "" {
		return given
	}
	return metav1.NamespaceDefault
}

// Resources is the compact form of a resource list: name and quantity pairs, such as
// Resources("cpu", "500m", "memory", "1Gi"). An odd number of arguments panics.
func Resources(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic(fmt.Sprintf("builders.Resources takes name and quantity pairs, got %q", pairs))
	}
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// In requires the node label key to have one of values.
func In(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// Requesting is a container that requests Resources(pairs...), for the pure-logic tests of
// how requests add up; it has no name or image, so give a cluster Pod's Requests instead.
func Requesting(pairs ...string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: Resources(pairs...)}}
}

// Sidecar is Requesting as a restartable init container, which runs alongside the app
// containers and the init containers after it.
func Sidecar(pairs ...string) corev1.Container {
	c := Requesting(pairs...)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// EqualResources compares resource lists by value, treating absent and zero alike.
func EqualResources(a, b corev1.ResourceList) bool {
	for _, pair := range [][2]corev1.ResourceList{{a, b}, {b, a}} {
		for name, quantity := range pair[0] {
			other := pair[1][name]
			if quantity.Cmp(other) != 0 {
				return false
			}
		}
	}
	return true
}
