package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/pods"
)

var resourceOne = resource.NewQuantity(1, resource.DecimalSI)

// resourceIndex maps resource names to positions in the dense vectors the scheduler compares in
// its inner loop, instead of comparing resource.Quantity maps.
type resourceIndex map[corev1.ResourceName]int

func newResourceIndex() resourceIndex {
	return resourceIndex{corev1.ResourceCPU: 0, corev1.ResourceMemory: 1, corev1.ResourcePods: 2}
}

func (ri resourceIndex) register(list corev1.ResourceList) {
	for name := range list {
		if _, ok := ri[name]; !ok {
			ri[name] = len(ri)
		}
	}
}

// resources holds milli-units per resource, indexed by a resourceIndex.
type resources []int64

func (ri resourceIndex) vector(list corev1.ResourceList) resources {
	v := make(resources, len(ri))
	for name, q := range list {
		if i, ok := ri[name]; ok {
			v[i] = q.MilliValue()
		}
	}
	return v
}

func (r resources) add(o resources) {
	for i := range r {
		r[i] += o[i]
	}
}

func (r resources) sub(o resources) {
	for i := range r {
		r[i] -= o[i]
	}
}

func (r resources) plus(o resources) resources {
	out := make(resources, len(r))
	for i := range r {
		out[i] = r[i] + o[i]
	}
	return out
}

// fitsWith reports whether used + extra <= limit for every resource.
func fitsWith(limit, used, extra resources) bool {
	for i := range limit {
		if used[i]+extra[i] > limit[i] {
			return false
		}
	}
	return true
}

// within reports whether v <= limit for every resource.
func within(limit, v resources) bool {
	for i := range limit {
		if v[i] > limit[i] {
			return false
		}
	}
	return true
}

// RequestCache keeps what pods reserve, by pod, for a caller that schedules the same pods many
// times: a consolidation pass simulates removing each node in turn, and computing the requests
// of the pods on the other nodes was most of its time. The pods must not change while it is
// used; it is not safe for concurrent use.
type RequestCache struct {
	byPod map[*corev1.Pod]corev1.ResourceList
}

// NewRequestCache is an empty cache.
func NewRequestCache() *RequestCache {
	return &RequestCache{byPod: map[*corev1.Pod]corev1.ResourceList{}}
}

// of is podRequests, computed once per pod. The list is shared: callers only read it.
func (c *RequestCache) of(pod *corev1.Pod) corev1.ResourceList {
	if c == nil {
		return podRequests(pod)
	}
	r, ok := c.byPod[pod]
	if !ok {
		r = podRequests(pod)
		c.byPod[pod] = r
	}
	return r
}

// podRequests is what a pod reserves on its node, computed as kube-scheduler does (init and
// sidecar containers, pod-level resources, overhead), but for the one pod it takes, which
// podVector adds. The list may be the pod's own: callers only read it.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	if spec := &pod.Spec; len(spec.Containers) == 1 && len(spec.InitContainers) == 0 && spec.Overhead == nil && spec.Resources == nil {
		// Most pods have one container and nothing else that reserves: its requests are the
		// pod's, with nothing to aggregate or copy.
		return spec.Containers[0].Resources.Requests
	}
	return pods.Requests(pod)
}

// podVector is what a pod with requests reserves, the one pod it takes included.
func (ri resourceIndex) podVector(requests corev1.ResourceList) resources {
	v := ri.vector(requests)
	v[ri[corev1.ResourcePods]] = resourceOne.MilliValue()
	return v
}

// fitsSwapped reports whether used - out + in <= limit for every resource.
func fitsSwapped(limit, used, out, in resources) bool {
	for i := range limit {
		if used[i]-out[i]+in[i] > limit[i] {
			return false
		}
	}
	return true
}
