package capacity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// NodeShape is what a new node of a group would look like to the scheduler.
type NodeShape struct {
	Labels      map[string]string
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
}

// ShapeOf is the shape a new node like node would have: its labels but its hostname (a new
// node gets its own), its taints but those of a passing condition (not-ready, cordoned,
// under pressure...), and its allocatable less what the DaemonSet pods among pods
// reserve on it, since a new node would run those too. pods may include other pods.
func ShapeOf(node *corev1.Node, pods []corev1.Pod) NodeShape {
	labels := maps.Clone(node.Labels)
	delete(labels, corev1.LabelHostname)
	allocatable := node.Status.Allocatable.DeepCopy()
	if allocatable == nil {
		allocatable = corev1.ResourceList{}
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != node.Name || IsTerminal(pod) || !isDaemonSetPod(pod) {
			continue
		}
		requests := EffectiveRequests(pod)
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
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	corev1.TaintNodeUnschedulable:                    true,
	corev1.TaintNodeMemoryPressure:                   true,
	corev1.TaintNodeDiskPressure:                     true,
	corev1.TaintNodePIDPressure:                      true,
	corev1.TaintNodeNetworkUnavailable:               true,
	corev1.TaintNodeOutOfService:                     true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"ToBeDeletedByClusterAutoscaler":                 true,
}

func isDaemonSetPod(pod *corev1.Pod) bool {
	for _, owner := range pod.OwnerReferences {
		if owner.Kind == "DaemonSet" && owner.Controller != nil && *owner.Controller {
			return true
		}
	}
	return false
}

// IsPending is true for a pod the scheduler has tried and failed to place, that still wants
// a node. A pod nominated to a node is not: it runs there once the pods it preempts are gone.
func IsPending(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" || pod.DeletionTimestamp != nil || IsTerminal(pod) {
		return false
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled {
			return condition.Status == corev1.ConditionFalse && condition.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// Fits returns nil when a pod could run on an empty node of the shape, else why not. It
// checks the constraints a node decides alone: nodeSelector, required node affinity, taints
// against tolerations, and requests against allocatable. Constraints between pods (pod
// affinity, topology spread) are not evaluated.
func (s NodeShape) Fits(pod *corev1.Pod) error {
	for key, value := range pod.Spec.NodeSelector {
		if actual, ok := s.Labels[key]; !ok || actual != value {
			return fmt.Errorf("nodeSelector %s=%s does not match the node's labels", key, value)
		}
	}
	if affinity := pod.Spec.Affinity; affinity != nil && affinity.NodeAffinity != nil {
		if required := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; required != nil && !matchesAnyTerm(required.NodeSelectorTerms, s.Labels) {
			return fmt.Errorf("required node affinity does not match the node's labels")
		}
	}
	for i := range s.Taints {
		taint := &s.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Spec.Tolerations, taint) {
			return fmt.Errorf("taint %s is not tolerated", taint.ToString())
		}
	}
	requests := EffectiveRequests(pod)
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		request := requests[name]
		if allocatable := quantityOf(s.Allocatable, name); request.Cmp(allocatable) > 0 {
			return fmt.Errorf("requests %s %s, the node offers %s", request.String(), name, allocatable.String())
		}
	}
	return nil
}

func tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}

// matchesAnyTerm evaluates required node affinity: terms are ORed, the expressions of a term
// ANDed. A term with no expression, or one on node fields (a new node's name is unknown),
// matches nothing.
func matchesAnyTerm(terms []corev1.NodeSelectorTerm, labels map[string]string) bool {
	for _, term := range terms {
		if len(term.MatchFields) > 0 || len(term.MatchExpressions) == 0 {
			continue
		}
		matches := true
		for _, requirement := range term.MatchExpressions {
			if !matchesRequirement(requirement, labels) {
				matches = false
				break
			}
		}
		if matches {
			return true
		}
	}
	return false
}

func matchesRequirement(requirement corev1.NodeSelectorRequirement, labels map[string]string) bool {
	value, ok := labels[requirement.Key]
	switch requirement.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(requirement.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(requirement.Values, value)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok || len(requirement.Values) != 1 {
			return false
		}
		actual, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false
		}
		bound, err := strconv.ParseInt(requirement.Values[0], 10, 64)
		if err != nil {
			return false
		}
		if requirement.Operator == corev1.NodeSelectorOpGt {
			return actual > bound
		}
		return actual < bound
	default:
		return false
	}
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

// Pack counts the new nodes of shape that pods need, by first-fit decreasing: the pods that
// fit the shape, largest first (by their largest share of any resource of the shape), each go
// to the first node with room, opening a node when none has. First-fit decreasing uses at
// most 11/9 of the optimal number of nodes plus one.
func Pack(shape NodeShape, pods []*corev1.Pod) Packing {
	packing := Packing{Unfit: map[string]string{}}
	type item struct {
		pod      *corev1.Pod
		requests map[corev1.ResourceName]int64
		share    float64
	}
	capacity := amounts(shape.Allocatable)
	var items []item
	for _, pod := range pods {
		if err := shape.Fits(pod); err != nil {
			packing.Unfit[pod.Namespace+"/"+pod.Name] = err.Error()
			continue
		}
		requests := amounts(EffectiveRequests(pod))
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
