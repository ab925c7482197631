package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/pods"
)

func TestFitsSwapped(t *testing.T) {
	limit := resources{4000, 8000}
	cases := []struct {
		name          string
		used, out, in resources
		want          bool
	}{
		{name: "a smaller pod for a larger one", used: resources{4000, 8000}, out: resources{1000, 4000}, in: resources{500, 1000}, want: true},
		{name: "the same pod back", used: resources{4000, 8000}, out: resources{1000, 1000}, in: resources{1000, 1000}, want: true},
		{name: "more memory than the pod out frees", used: resources{3000, 7000}, out: resources{1000, 1000}, in: resources{500, 3000}, want: false},
		{name: "room left makes up the difference", used: resources{3000, 6000}, out: resources{1000, 1000}, in: resources{500, 3000}, want: true},
		{name: "cpu over by one", used: resources{4000, 4000}, out: resources{500, 0}, in: resources{501, 0}, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fitsSwapped(limit, c.used, c.out, c.in); got != c.want {
				t.Errorf("fitsSwapped(%v, %v, %v, %v) = %v, want %v", limit, c.used, c.out, c.in, got, c.want)
			}
		})
	}
}

// TestPodRequests: the one-container shortcut reserves what kube-scheduler's aggregation does,
// and podVector adds the pod's slot.
func TestPodRequests(t *testing.T) {
	container := func(requests corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: requests}}
	}
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	large := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), "example.com/gpu": resource.MustParse("1")}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container(small)
	sidecar.RestartPolicy = &always
	for name, spec := range map[string]corev1.PodSpec{
		"one container":         {Containers: []corev1.Container{container(small)}},
		"one without requests":  {Containers: []corev1.Container{{}}},
		"two containers":        {Containers: []corev1.Container{container(small), container(large)}},
		"init larger than main": {InitContainers: []corev1.Container{container(large)}, Containers: []corev1.Container{container(small)}},
		"sidecar":               {InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{container(small)}},
		"overhead":              {Overhead: small, Containers: []corev1.Container{container(large)}},
		"pod-level resources":   {Resources: &corev1.ResourceRequirements{Requests: large}, Containers: []corev1.Container{container(small)}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: spec}
			want := pods.Requests(pod)
			got := podRequests(pod)
			if len(got) != len(want) {
				t.Fatalf("requests %v, want %v", got, want)
			}
			for name, q := range want {
				if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
					t.Errorf("%s: %v, want %v", name, got[name], q)
				}
			}
			index := newResourceIndex()
			index.register(got)
			if v := index.podVector(got); v[index[corev1.ResourcePods]] != 1000 {
				t.Errorf("pod slots %d milli, want 1000", v[index[corev1.ResourcePods]])
			}
		})
	}
}
