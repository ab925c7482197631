package capacity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// NodeShape is what a new node of a group would look like to the scheduler.
type NodeShape struct {
	Labels      map[string]string
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
}

// ShapeOf is the shape a new node like node would have: its labels but its hostname (a new
// node gets its own), its taints but those of a passing condition (not-ready, cordoned,
// under pressure...), and its allocatable less what the DaemonSet pods among bound
// reserve on it, since a new node would run those too. bound may include other pods.
func ShapeOf(node *corev1.Node, bound []corev1.Pod) NodeShape {
	labels := maps.Clone(node.Labels)
	delete(labels, corev1.LabelHostname)
	allocatable := node.Status.Allocatable.DeepCopy()
	if allocatable == nil {
		allocatable = corev1.ResourceList{}
	}
	for i := range bound {
		pod := &bound[i]
		if pod.Spec.NodeName != node.Name || pods.IsTerminal(pod) || !pods.IsOwnedByDaemonSet(pod) {
			continue
		}
		requests := pods.Requests(pod)
		requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
		for name, quantity := range requests {
			if left, ok := allocatable[name]; ok {
				left.Sub(quantity)
				allocatable[name] = left
			}
		}
	}
	var taints []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if !transientTaints[taint.Key] {
			taints = append(taints, taint)
		}
	}
	return NodeShape{Labels: labels, Taints: taints, Allocatable: allocatable}
}

// transientTaints reflect a node's current condition or lifecycle, not the group's shape: a
// new node either never has them or loses them once it is Ready.
var transientTaints = map[string]bool{
	corev1.TaintNodeNotReady:                 true,
	corev1.TaintNodeUnreachable:              true,
	corev1.TaintNodeUnschedulable:            true,
	corev1.TaintNodeMemoryPressure:           true,
	corev1.TaintNodeDiskPressure:             true,
	corev1.TaintNodePIDPressure:              true,
	corev1.TaintNodeNetworkUnavailable:       true,
	corev1.TaintNodeOutOfService:             true,
	nodes.CloudProviderUninitializedTaintKey: true,
	"ToBeDeletedByClusterAutoscaler":         true,
}

// Fits returns nil when a pod could run on an empty node of the shape, else why not. It
// checks the constraints a node decides alone: nodeSelector, required node affinity, taints
// against tolerations, and requests against allocatable. Constraints between pods (pod
// affinity, topology spread) are not evaluated.
func (s NodeShape) Fits(pod *corev1.Pod) error {
	if err := scheduling.CheckNodeAffinity(pod, s.Labels); err != nil {
		return err
	}
	if taint := scheduling.UntoleratedTaint(pod.Spec.Tolerations, s.Taints); taint != nil {
		return fmt.Errorf("taint %s is not tolerated", taint.ToString())
	}
	requests := pods.Requests(pod)
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		request := requests[name]
		if allocatable := quantityOf(s.Allocatable, name); request.Cmp(allocatable) > 0 {
			return fmt.Errorf("requests %s %s, the node offers %s", request.String(), name, allocatable.String())
		}
	}
	return nil
}

// Packing is the outcome of packing pending pods onto new nodes of a shape.
type Packing struct {
	// Pods is how many pods fit the shape.
	Pods int
	// Nodes is how many new nodes those pods need.
	Nodes int
	// Unfit maps each pod (namespace/name) that cannot run on the shape to the reason.
	Unfit map[string]string
}

// Pack counts the new nodes of shape that pending pods need, by first-fit decreasing: the pods that
// fit the shape, largest first (by their largest share of any resource of the shape), each go
// to the first node with room, opening a node when none has. First-fit decreasing uses at
// most 11/9 of the optimal number of nodes plus one.
func Pack(shape NodeShape, pending []*corev1.Pod) Packing {
	packing := Packing{Unfit: map[string]string{}}
	type item struct {
		pod      *corev1.Pod
		requests map[corev1.ResourceName]int64
		share    float64
	}
	capacity := amounts(shape.Allocatable)
	var items []item
	for _, pod := range pending {
		if err := shape.Fits(pod); err != nil {
			packing.Unfit[pod.Namespace+"/"+pod.Name] = err.Error()
			continue
		}
		requests := amounts(pods.Requests(pod))
		requests[corev1.ResourcePods] = 1
		share := 0.0
		for name, amount := range requests {
			if capacity[name] > 0 {
				share = math.Max(share, float64(amount)/float64(capacity[name]))
			}
		}
		items = append(items, item{pod: pod, requests: requests, share: share})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.share != b.share {
			if a.share > b.share {
				return -1
			}
			return 1
		}
		return strings.Compare(a.pod.Namespace+"/"+a.pod.Name, b.pod.Namespace+"/"+b.pod.Name)
	})
	var free []map[corev1.ResourceName]int64
	for _, it := range items {
		placed := false
		for _, room := range free {
			if fitsIn(it.requests, room) {
				take(room, it.requests)
				placed = true
				break
			}
		}
		if !placed {
			room := maps.Clone(capacity)
			take(room, it.requests)
			free = append(free, room)
		}
	}
	packing.Pods = len(items)
	packing.Nodes = len(free)
	return packing
}

// amounts converts quantities to integers: millicores for cpu, whole units (rounded up) for
// everything else, so packing is exact integer arithmetic.
func amounts(list corev1.ResourceList) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(list))
	for name, quantity := range list {
		if name == corev1.ResourceCPU {
			out[name] = quantity.MilliValue()
		} else {
			out[name] = quantity.Value()
		}
	}
	return out
}

func fitsIn(requests, room map[corev1.ResourceName]int64) bool {
	for name, amount := range requests {
		if amount > room[name] {
			return false
		}
	}
	return true
}

func take(room, requests map[corev1.ResourceName]int64) {
	for name, amount := range requests {
		room[name] -= amount
	}
}
