package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{name: "no containers request anything", spec: corev1.PodSpec{Containers: []corev1.Container{{}}}, want: list()},
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{container("cpu", "250m", "memory", "1Gi"), container("cpu", "750m", "memory", "512Mi")}},
			want: list("cpu", "1", "memory", "1536Mi"),
		},
		{
			name: "largest init container wins when it exceeds the sum",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "2"), container("cpu", "500m", "memory", "4Gi")},
				Containers:     []corev1.Container{container("cpu", "1", "memory", "1Gi")},
			},
			want: list("cpu", "2", "memory", "4Gi"),
		},
		{
			name: "init containers are not summed",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "600m"), container("cpu", "600m")},
				Containers:     []corev1.Container{container("cpu", "1")},
			},
			want: list("cpu", "1"),
		},
		{
			name: "overhead is added on top",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "3")},
				Containers:     []corev1.Container{container("cpu", "1")},
				Overhead:       list("cpu", "250m", "memory", "120Mi"),
			},
			want: list("cpu", "3250m", "memory", "120Mi"),
		},
		{
			name: "sidecars run alongside the app containers and later init containers",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar("cpu", "500m"), container("cpu", "2")},
				Containers:     []corev1.Container{container("cpu", "1")},
			},
			// The init step is 2 + the 500m sidecar; running is 1 + 500m.
			want: list("cpu", "2500m"),
		},
		{
			name: "an init container before a sidecar does not run with it",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "2"), sidecar("cpu", "500m")},
				Containers:     []corev1.Container{container("cpu", "1")},
			},
			want: list("cpu", "2"),
		},
		{
			name: "pod-level requests replace the containers' aggregate",
			spec: corev1.PodSpec{
				Containers: []corev1.Container{container("cpu", "1", "memory", "1Gi")},
				Resources:  &corev1.ResourceRequirements{Requests: list("cpu", "3")},
				Overhead:   list("cpu", "100m"),
			},
			want: list("cpu", "3100m", "memory", "1Gi"),
		},
		{
			name: "extended resources count like any other",
			spec: corev1.PodSpec{Containers: []corev1.Container{container("nvidia.com/gpu", "1"), container("nvidia.com/gpu", "2")}},
			want: list("nvidia.com/gpu", "3"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Requests(&corev1.Pod{Spec: tc.spec})
			if !equalLists(got, tc.want) {
				t.Errorf("Requests = %v, want %v", got, tc.want)
			}
		})
	}
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
