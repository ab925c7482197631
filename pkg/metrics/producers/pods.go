package producers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/pods"
)

// podsOn lists the pods bound to nodeName, or the unscheduled pods for an empty nodeName.
// They are the cache's own, not copies (every producer runs each period, and a copy of every
// pod each time was most of the controller's allocations): producers only read them.
func podsOn(ctx context.Context, reader client.Reader, nodeName string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := reader.List(ctx, list, client.MatchingFields{pods.NodeNameField: nodeName}, client.UnsafeDisableDeepCopy); err != nil {
		if nodeName == "" {
			return nil, failure(ReasonPodsUnreadable, "listing unscheduled pods, %w", err)
		}
		return nil, failure(ReasonPodsUnreadable, "listing the pods of node %s, %w", nodeName, err)
	}
	return list.Items, nil
}

// nodesMatching lists the nodes carrying every label of selector; like podsOn's pods, they are
// the cache's own, only read.
func nodesMatching(ctx context.Context, reader client.Reader, selector map[string]string) ([]corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := reader.List(ctx, nodes, client.MatchingLabels(selector), client.UnsafeDisableDeepCopy); err != nil {
		return nil, failure(ReasonNodesUnreadable, "listing the nodes matching nodeSelector %s, %w", selectorString(selector), err)
	}
	return nodes.Items, nil
}

// selectorString renders a nodeSelector as kubectl would take it, e.g. "group=a,zone=b".
func selectorString(selector map[string]string) string {
	return labels.SelectorFromSet(selector).String()
}
