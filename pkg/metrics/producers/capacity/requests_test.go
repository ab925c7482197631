package capacity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func container(pairs ...string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: list(pairs...)}}
}

// equalLists compares by value, treating absent and zero alike.
func equalLists(a, b corev1.ResourceList) bool {
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
