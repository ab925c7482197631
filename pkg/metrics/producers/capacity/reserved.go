package capacity

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// ReservedResources are the resources a reservedCapacity producer reports, in this order.
var ReservedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

// Reservation is how much of a resource a group of nodes offers and how much pods reserve.
type Reservation struct {
	Reserved resource.Quantity
	Capacity resource.Quantity
}

// Utilization is Reserved / Capacity, a 0–1 ratio (above 1 only when pods were bound past
// allocatable). ok is false when there is no capacity, where the ratio means nothing.
func (r Reservation) Utilization() (utilization float64, ok bool) {
	capacity := r.Capacity.AsApproximateFloat64()
	if capacity <= 0 {
		return 0, false
	}
	return r.Reserved.AsApproximateFloat64() / capacity, true
}

// String renders the reservation as status shows it, e.g. "62.50%, 10/16".
func (r Reservation) String() string {
	utilization, ok := r.Utilization()
	if !ok {
		return fmt.Sprintf("no capacity, %s/%s", r.Reserved.String(), r.Capacity.String())
	}
	return fmt.Sprintf("%.2f%%, %s/%s", utilization*100, r.Reserved.String(), r.Capacity.String())
}

// Reserve totals, over the nodes of group that can take pods (Ready and not cordoned), their
// allocatable cpu, memory and pods against the effective requests of the pods bound to them
// that have not terminated. bound may include pods of other nodes; they are ignored.
func Reserve(group []corev1.Node, bound []corev1.Pod) map[corev1.ResourceName]Reservation {
	reservations := map[corev1.ResourceName]Reservation{}
	for _, name := range ReservedResources {
		reservations[name] = Reservation{}
	}
	counted := map[string]bool{}
	for i := range group {
		node := &group[i]
		if !nodes.IsReady(node) || node.Spec.Unschedulable {
			continue
		}
		counted[node.Name] = true
		for _, name := range ReservedResources {
			r := reservations[name]
			r.Capacity.Add(quantityOf(node.Status.Allocatable, name))
			reservations[name] = r
		}
	}
	for i := range bound {
		pod := &bound[i]
		if !counted[pod.Spec.NodeName] || pods.IsTerminal(pod) {
			continue
		}
		requests := pods.Requests(pod)
		requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
		for _, name := range ReservedResources {
			r := reservations[name]
			r.Reserved.Add(quantityOf(requests, name))
			reservations[name] = r
		}
	}
	return reservations
}

// Sum adds reservations up, resource by resource: Reserve of a group is Sum of Reserve of each
// of its nodes, so that a node's part can be kept until its node or pods change.
func Sum(parts ...map[corev1.ResourceName]Reservation) map[corev1.ResourceName]Reservation {
	total := map[corev1.ResourceName]Reservation{}
	for _, name := range ReservedResources {
		var sum Reservation
		for _, part := range parts {
			sum.Reserved.Add(part[name].Reserved)
			sum.Capacity.Add(part[name].Capacity)
		}
		total[name] = sum
	}
	return total
}
