package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{name: "no containers request anything", spec: corev1.PodSpec{Containers: []corev1.Container{{}}}, want: builders.Resources()},
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{builders.Requesting("cpu", "250m", "memory", "1Gi"), builders.Requesting("cpu", "750m", "memory", "512Mi")}},
			want: builders.Resources("cpu", "1", "memory", "1536Mi"),
		},
		{
			name: "largest init container wins when it exceeds the sum",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{builders.Requesting("cpu", "2"), builders.Requesting("cpu", "500m", "memory", "4Gi")},
				Containers:     []corev1.Container{builders.Requesting("cpu", "1", "memory", "1Gi")},
			},
			want: builders.Resources("cpu", "2", "memory", "4Gi"),
		},
		{
			name: "init containers are not summed",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{builders.Requesting("cpu", "600m"), builders.Requesting("cpu", "600m")},
				Containers:     []corev1.Container{builders.Requesting("cpu", "1")},
			},
			want: builders.Resources("cpu", "1"),
		},
		{
			name: "overhead is added on top",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{builders.Requesting("cpu", "3")},
				Containers:     []corev1.Container{builders.Requesting("cpu", "1")},
				Overhead:       builders.Resources("cpu", "250m", "memory", "120Mi"),
			},
			want: builders.Resources("cpu", "3250m", "memory", "120Mi"),
		},
		{
			name: "sidecars run alongside the app containers and later init containers",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{builders.Sidecar("cpu", "500m"), builders.Requesting("cpu", "2")},
				Containers:     []corev1.Container{builders.Requesting("cpu", "1")},
			},
			// The init step is 2 + the 500m sidecar; running is 1 + 500m.
			want: builders.Resources("cpu", "2500m"),
		},
		{
			name: "an init container before a sidecar does not run with it",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{builders.Requesting("cpu", "2"), builders.Sidecar("cpu", "500m")},
				Containers:     []corev1.Container{builders.Requesting("cpu", "1")},
			},
			want: builders.Resources("cpu", "2"),
		},
		{
			name: "pod-level requests replace the containers' aggregate",
			spec: corev1.PodSpec{
				Containers: []corev1.Container{builders.Requesting("cpu", "1", "memory", "1Gi")},
				Resources:  &corev1.ResourceRequirements{Requests: builders.Resources("cpu", "3")},
				Overhead:   builders.Resources("cpu", "100m"),
			},
			want: builders.Resources("cpu", "3100m", "memory", "1Gi"),
		},
		{
			name: "extended resources count like any other",
			spec: corev1.PodSpec{Containers: []corev1.Container{builders.Requesting("nvidia.com/gpu", "1"), builders.Requesting("nvidia.com/gpu", "2")}},
			want: builders.Resources("nvidia.com/gpu", "3"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Requests(&corev1.Pod{Spec: tc.spec})
			if !builders.EqualResources(got, tc.want) {
				t.Errorf("Requests = %v, want %v", got, tc.want)
			}
		})
	}
}
