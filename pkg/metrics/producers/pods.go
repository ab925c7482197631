package producers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodNodeNameField is the pod field producers select pods by: the node a pod is bound to,
// empty for a pod not yet scheduled.
const PodNodeNameField = "spec.nodeName"

// IndexPodNodeName lets a cache-backed reader serve the PodNodeNameField selector, as the
// API server does.
func IndexPodNodeName(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodNodeNameField, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by %s, %w", PodNodeNameField, err)
	}
	return nil
}

// podsOn lists the pods bound to nodeName, or the unscheduled pods for an empty nodeName.
func podsOn(ctx context.Context, reader client.Reader, nodeName string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.MatchingFields{PodNodeNameField: nodeName}); err != nil {
		if nodeName == "" {
			return nil, failure(ReasonPodsUnreadable, "listing unscheduled pods, %w", err)
		}
		return nil, failure(ReasonPodsUnreadable, "listing the pods of node %s, %w", nodeName, err)
	}
	return pods.Items, nil
}

// nodesMatching lists the nodes carrying every label of selector.
func nodesMatching(ctx context.Context, reader client.Reader, selector map[string]string) ([]corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := reader.List(ctx, nodes, client.MatchingLabels(selector)); err != nil {
		return nil, failure(ReasonNodesUnreadable, "listing the nodes matching nodeSelector %s, %w", selectorString(selector), err)
	}
	return nodes.Items, nil
}

// selectorString renders a nodeSelector as kubectl would take it, e.g. "group=a,zone=b".
func selectorString(selector map[string]string) string {
	return labels.SelectorFromSet(selector).String()
}
