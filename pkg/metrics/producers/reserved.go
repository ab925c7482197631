package producers

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/metrics/producers/capacity"
)

// ReservedCapacityGauges are the three gauges of one resource of a reservedCapacity producer.
type ReservedCapacityGauges struct {
	Reserved, Capacity, Utilization *prometheus.GaugeVec
}

// ReservedCapacity holds the gauges of cpu (cores), memory (bytes) and pods (count).
var ReservedCapacity = map[corev1.ResourceName]ReservedCapacityGauges{
	corev1.ResourceCPU:    reservedCapacityGauges("cpu", "cores"),
	corev1.ResourceMemory: reservedCapacityGauges("memory", "bytes"),
	corev1.ResourcePods:   reservedCapacityGauges("pods", "pods"),
}

func reservedCapacityGauges(resource, unit string) ReservedCapacityGauges {
	return ReservedCapacityGauges{
		Reserved: newGauge("reserved_capacity", resource+"_reserved",
			"Effective requests of the non-terminal pods on the group's Ready, schedulable nodes, in "+unit+"."),
		Capacity: newGauge("reserved_capacity", resource+"_capacity",
			"Allocatable of the group's Ready, schedulable nodes, in "+unit+"."),
		Utilization: newGauge("reserved_capacity", resource+"_utilization",
			"Reserved over capacity, a 0-1 ratio."),
	}
}

// reservedCapacityGaugeList is every gauge of ReservedCapacity, resource by resource.
func reservedCapacityGaugeList() []*prometheus.GaugeVec {
	var all []*prometheus.GaugeVec
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		g := ReservedCapacity[name]
		all = append(all, g.Reserved, g.Capacity, g.Utilization)
	}
	return all
}

// ReservedCapacityProducer reports how much of a node group's allocatable cpu, memory and
// pods its pods reserve.
type ReservedCapacityProducer struct {
	Reader client.Reader
	// Cache, when set, shares the reservation of a nodeSelector with the other producers and
	// across periods until Reader's nodes or pods change; nil reads them every time.
	Cache *CapacityCache
}

func (p *ReservedCapacityProducer) Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Output[map[corev1.ResourceName]string], error) {
	selector := mp.Spec.ReservedCapacity.NodeSelector
	group, err := p.Cache.reservation(ctx, p.Reader, selector)
	if err != nil {
		return Output[map[corev1.ResourceName]string]{}, err
	}
	reservations := group.reservations
	result := Output[map[corev1.ResourceName]string]{Status: map[corev1.ResourceName]string{}}
	for _, name := range capacity.ReservedResources {
		r := reservations[name]
		utilization, ok := r.Utilization()
		if !ok {
			if group.nodes == 0 {
				return Output[map[corev1.ResourceName]string]{}, failure(ReasonNoCapacity, "no node matches nodeSelector %s", selectorString(selector))
			}
			return Output[map[corev1.ResourceName]string]{}, failure(ReasonNoCapacity, "none of the %d nodes matching nodeSelector %s is Ready, schedulable and offering %s",
				group.nodes, selectorString(selector), name)
		}
		g := ReservedCapacity[name]
		result.Samples = append(result.Samples,
			Sample{Gauge: g.Reserved, Value: r.Reserved.AsApproximateFloat64()},
			Sample{Gauge: g.Capacity, Value: r.Capacity.AsApproximateFloat64()},
			Sample{Gauge: g.Utilization, Value: utilization},
		)
		result.Status[name] = r.String()
	}
	return result, nil
}
