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
	if err := indexer.IndexField(ctx, &corev1.Pod{}, NodeNameField, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by %s, %w", NodeNameField, err)
	}
	return nil
}
