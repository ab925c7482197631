package nodeclaims

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Field selectors a cache-backed reader answers from an index: nodes by spec.providerID and
// NodeClaims by status.providerID, the join between a NodeClaim, its instance and its node.
const (
	NodeProviderIDField      = "spec.providerID"
	NodeClaimProviderIDField = "status.providerID"
)

// Index lets a cache-backed reader serve NodeProviderIDField and NodeClaimProviderIDField;
// objects without a provider id are not indexed.
func Index(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Node{}, NodeProviderIDField, NodeProviderIDOf); err != nil {
		return fmt.Errorf("indexing nodes by %s, %w", NodeProviderIDField, err)
	}
	if err := indexer.IndexField(ctx, &v1.NodeClaim{}, NodeClaimProviderIDField, NodeClaimProviderIDOf); err != nil {
		return fmt.Errorf("indexing nodeclaims by %s, %w", NodeClaimProviderIDField, err)
	}
	return nil
}

// NodeProviderIDOf is the index value of a node for NodeProviderIDField.
func NodeProviderIDOf(o client.Object) []string {
	return nonEmpty(o.(*corev1.Node).Spec.ProviderID)
}

// NodeClaimProviderIDOf is the index value of a NodeClaim for NodeClaimProviderIDField.
func NodeClaimProviderIDOf(o client.Object) []string {
	return nonEmpty(o.(*v1.NodeClaim).Status.ProviderID)
}

func nonEmpty(value string) []string {
	if value == "" {
		return nil
	}
	return []string{value}
}

// NodeFor is the node registered for the NodeClaim's instance, nil when none is; an error
// when several claim it.
func NodeFor(ctx context.Context, reader client.Reader, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	var list corev1.NodeList
	if err := reader.List(ctx, &list, client.MatchingFields{NodeProviderIDField: nc.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing the nodes of instance %s, %w", nc.Status.ProviderID, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
		return &list.Items[0], nil
	default:
		return nil, fmt.Errorf("%d nodes have provider id %s", len(list.Items), nc.Status.ProviderID)
	}
}
