package pods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeNameField is the pod field to select pods by the node they are bound to, empty for a
// pod not yet scheduled.
const NodeNameField = "spec.nodeName"

// IndexNodeName lets a cache-backed reader serve the NodeNameField selector, as the API
// server does.
func IndexNodeName(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, NodeNameField, NodeNameOf); err != nil {
		return fmt.Errorf("indexing pods by %s, %w", NodeNameField, err)
	}
	return nil
}

// NodeNameOf is the index value of a pod for NodeNameField: the node it is bound to.
func NodeNameOf(o client.Object) []string {
	return []string{o.(*corev1.Pod).Spec.NodeName}
}

// NominatedNodeField is the pod field to select pods by the node they are nominated to. The API
// server selects by the field as it is; the cache's index (IndexNominatedNodeName) holds only
// the pods NominatedNode names a node for, so readers filter with NominatedNode either way.
const NominatedNodeField = "status.nominatedNodeName"

// IndexNominatedNodeName lets a cache-backed reader serve the NominatedNodeField selector.
func IndexNominatedNodeName(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, NominatedNodeField, NominatedNodeOf); err != nil {
		return fmt.Errorf("indexing pods by %s, %w", NominatedNodeField, err)
	}
	return nil
}

// NominatedNodeOf is the index value of a pod for NominatedNodeField: the node it waits for,
// none when it waits for none.
func NominatedNodeOf(o client.Object) []string {
	if node := NominatedNode(o.(*corev1.Pod)); node != "" {
		return []string{node}
	}
	return nil
}
