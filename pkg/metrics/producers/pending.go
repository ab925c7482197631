package producers

import (
	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/metrics/producers/capacity"
	"karpenter.sh/karpenter/pkg/nodes"
)

// PendingCapacityNodes is how many more nodes of a group its pending pods need.
var PendingCapacityNodes = newGauge("pending_capacity", "nodes",
	"Nodes of the group that pending pods fitting its node shape need, by first-fit-decreasing packing.")

// PendingCapacityProducer reports how many more nodes of a group would let the pods the
// scheduler could not place run.
type PendingCapacityProducer struct {
	Reader client.Reader
	// Cache, when set, shares the unschedulable pods with the other producers and across
	// periods until a pod without a node changes; nil reads them every time.
	Cache *CapacityCache
}

func (p *PendingCapacityProducer) Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Output[*v1alpha1.PendingCapacityStatus], error) {
	spec := mp.Spec.PendingCapacity
	pending, err := p.Cache.unschedulablePods(ctx, p.Reader)
	if err != nil {
		return Output[*v1alpha1.PendingCapacityStatus]{}, err
	}
	var packing capacity.Packing
	if len(pending) > 0 {
		shape, err := p.shape(ctx, spec)
		if err != nil {
			return Output[*v1alpha1.PendingCapacityStatus]{}, err
		}
		packing = capacity.Pack(*shape, pending)
		if len(packing.Unfit) > 0 {
			log.FromContext(ctx).V(1).Info("pending pods that do not fit the group's node shape", "pods", packing.Unfit)
		}
	}
	// Counts of one cluster's pending pods and the nodes they need fit the API's int32.
	status := &v1alpha1.PendingCapacityStatus{Pods: int32(packing.Pods), Nodes: int32(packing.Nodes)} //nolint:gosec // G115, see above.
	return Output[*v1alpha1.PendingCapacityStatus]{
		Samples: []Sample{{Gauge: PendingCapacityNodes, Value: float64(packing.Nodes)}},
		Status:  status,
	}, nil
}

// shape is the node a group would add: like its best existing node (Ready and schedulable
// first, then by name, so that the choice is stable), or the spec's template when the group
// has no nodes.
func (p *PendingCapacityProducer) shape(ctx context.Context, spec *v1alpha1.PendingCapacitySpec) (*capacity.NodeShape, error) {
	group, err := nodesMatching(ctx, p.Reader, spec.NodeSelector)
	if err != nil {
		return nil, err
	}
	if len(group) == 0 {
		if spec.NodeTemplate == nil {
			return nil, failure(ReasonNoNodeShape, "pods are pending, no node matches nodeSelector %s and spec.pendingCapacity.nodeTemplate is not set, so the shape of a new node is unknown", selectorString(spec.NodeSelector))
		}
		return shapeOfTemplate(spec), nil
	}
	usable := func(n *corev1.Node) bool { return nodes.IsReady(n) && !n.Spec.Unschedulable }
	reference := slices.MinFunc(group, func(a, b corev1.Node) int {
		if ua, ub := usable(&a), usable(&b); ua != ub {
			if ua {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	// DaemonSet pods on the reference node would run on a new node too.
	bound, err := podsOn(ctx, p.Reader, reference.Name)
	if err != nil {
		return nil, err
	}
	shape := capacity.ShapeOf(&reference, bound)
	return &shape, nil
}

func shapeOfTemplate(spec *v1alpha1.PendingCapacitySpec) *capacity.NodeShape {
	labels := maps.Clone(spec.NodeTemplate.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, spec.NodeSelector)
	return &capacity.NodeShape{
		Labels:      labels,
		Taints:      slices.Clone(spec.NodeTemplate.Taints),
		Allocatable: spec.NodeTemplate.Allocatable.DeepCopy(),
	}
}
