package nodes

import (
	corev1 "k8s.io/api/core/v1"
)

// TrimForCache is the informer cache's transform of nodes: it drops the managed fields,
// kubectl's last-applied configuration and status.images, the kubelet's list of every image on
// the node (often the bulk of a node object) that no controller reads. The cache's nodes are
// then partial: a controller patches one (a patch of the difference carries only what it
// changed) but never Updates it whole. Non-nodes pass unchanged; trimming twice changes nothing.
func TrimForCache(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.ManagedFields = nil
	delete(node.Annotations, corev1.LastAppliedConfigAnnotation)
	node.Status.Images = nil
	return node, nil
}
