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
)

// PendingCapacityProducer reports how many more nodes of a group would let the pods the
// scheduler could not place run.
type PendingCapacityProducer struct {
	Reader client.Reader
}

func (p *PendingCapacityProducer) Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Result, error) {
	spec := mp.Spec.PendingCapacity
	unscheduled, err := podsOn(ctx, p.Reader, "")
	if err != nil {
		return Result{}, err
	}
	var pending []*corev1.Pod
	for i := range unscheduled {
		if capacity.IsPending(&unscheduled[i]) {
			pending = append(pending, &unscheduled[i])
		}
	}
	var packing capacity.Packing
	if len(pending) > 0 {
		shape, err := p.shape(ctx, spec)
		if err != nil {
			return Result{}, err
		}
		packing = capacity.Pack(*shape, pending)
		if len(packing.Unfit) > 0 {
			log.FromContext(ctx).V(1).Info("pending pods that do not fit the group's node shape", "pods", packing.Unfit)
		}
	}
	// Counts of one cluster's pending pods and the nodes they need fit the API's int32.
	mp.Status.PendingCapacity = &v1alpha1.PendingCapacityStatus{Pods: int32(packing.Pods), Nodes: int32(packing.Nodes)} //nolint:gosec // G115, see above.
	return Result{Samples: []Sample{{Gauge: PendingCapacityNodes, Value: float64(packing.Nodes)}}}, nil
}

// shape is the node a group would add: like its best existing node (Ready and schedulable
// first, then by name, so that the choice is stable), or the spec's template when the group
// has no nodes.
func (p *PendingCapacityProducer) shape(ctx context.Context, spec *v1alpha1.PendingCapacitySpec) (*capacity.NodeShape, error) {
	nodes, err := nodesMatching(ctx, p.Reader, spec.NodeSelector)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		if spec.NodeTemplate == nil {
			return nil, failure(ReasonNoNodeShape, "pods are pending, no node matches nodeSelector %s and spec.pendingCapacity.nodeTemplate is not set, so the shape of a new node is unknown", selectorString(spec.NodeSelector))
		}
		return shapeOfTemplate(spec), nil
	}
	usable := func(n *corev1.Node) bool { return capacity.IsReady(n) && !n.Spec.Unschedulable }
	reference := slices.MinFunc(nodes, func(a, b corev1.Node) int {
		if ua, ub := usable(&a), usable(&b); ua != ub {
			if ua {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	// DaemonSet pods on the reference node would run on a new node too.
	pods, err := podsOn(ctx, p.Reader, reference.Name)
	if err != nil {
		return nil, err
	}
	shape := capacity.ShapeOf(&reference, pods)
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
