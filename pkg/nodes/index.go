package nodes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// ProvisionerField selects nodes by the Provisioner that launched them, the value of their
// provisioner-name label. A cache-backed reader answers it from an index, where a label
// selector scans and copies every node of the cluster.
const ProvisionerField = "metadata.labels." + v1alpha5.ProvisionerNameLabelKey

// IndexProvisioner lets a cache-backed reader serve the ProvisionerField selector; nodes
// without the label are not indexed.
func IndexProvisioner(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Node{}, ProvisionerField, ProvisionerOf); err != nil {
		return fmt.Errorf("indexing nodes by %s, %w", ProvisionerField, err)
	}
	return nil
}

// ProvisionerOf is the index value of a node for ProvisionerField: its Provisioner's name, or
// none for a node Karpenter did not launch.
func ProvisionerOf(o client.Object) []string {
	name, ok := o.GetLabels()[v1alpha5.ProvisionerNameLabelKey]
	if !ok {
		return nil
	}
	return []string{name}
}
