package producers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/metrics/producers/capacity"
	"karpenter.sh/karpenter/pkg/nodes"
)

// ReservedCapacityProducer reports how much of a node group's allocatable cpu, memory and
// pods its pods reserve.
type ReservedCapacityProducer struct {
	Reader client.Reader
}

func (p *ReservedCapacityProducer) Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Result, error) {
	selector := mp.Spec.ReservedCapacity.NodeSelector
	group, err := nodesMatching(ctx, p.Reader, selector)
	if err != nil {
		return Result{}, err
	}
	var bound []corev1.Pod
	for i := range group {
		if !nodes.IsReady(&group[i]) || group[i].Spec.Unschedulable {
			continue
		}
		onNode, err := podsOn(ctx, p.Reader, group[i].Name)
		if err != nil {
			return Result{}, err
		}
		bound = append(bound, onNode...)
	}
	reservations := capacity.Reserve(group, bound)
	var result Result
	mp.Status.ReservedCapacity = map[corev1.ResourceName]string{}
	for _, name := range capacity.ReservedResources {
		r := reservations[name]
		utilization, ok := r.Utilization()
		if !ok {
			if len(group) == 0 {
				return Result{}, failure(ReasonNoCapacity, "no node matches nodeSelector %s", selectorString(selector))
			}
			return Result{}, failure(ReasonNoCapacity, "none of the %d nodes matching nodeSelector %s is Ready, schedulable and offering %s",
				len(group), selectorString(selector), name)
		}
		g := ReservedCapacity[name]
		result.Samples = append(result.Samples,
			Sample{Gauge: g.Reserved, Value: r.Reserved.AsApproximateFloat64()},
			Sample{Gauge: g.Capacity, Value: r.Capacity.AsApproximateFloat64()},
			Sample{Gauge: g.Utilization, Value: utilization},
		)
		mp.Status.ReservedCapacity[name] = r.String()
	}
	return result, nil
}
