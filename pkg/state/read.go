package state

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Read lists every pod, node, NodeClaim, DaemonSet, persistent volume claim, persistent volume,
// storage class and CSINode, at now; the caller adds the instance types it plans with.
func Read(ctx context.Context, reader client.Reader, now time.Time) (*Snapshot, error) {
	var podList corev1.PodList
	if err := reader.List(ctx, &podList); err != nil {
		return nil, fmt.Errorf("listing pods, %w", err)
	}
	var nodeList corev1.NodeList
	if err := reader.List(ctx, &nodeList); err != nil {
		return nil, fmt.Errorf("listing nodes, %w", err)
	}
	var nodeClaims v1.NodeClaimList
	if err := reader.List(ctx, &nodeClaims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var daemonSets appsv1.DaemonSetList
	if err := reader.List(ctx, &daemonSets); err != nil {
		return nil, fmt.Errorf("listing daemonsets, %w", err)
	}
	var claims corev1.PersistentVolumeClaimList
	if err := reader.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing persistent volume claims, %w", err)
	}
	var volumes corev1.PersistentVolumeList
	if err := reader.List(ctx, &volumes); err != nil {
		return nil, fmt.Errorf("listing persistent volumes, %w", err)
	}
	var classes storagev1.StorageClassList
	if err := reader.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("listing storage classes, %w", err)
	}
	var csiNodes storagev1.CSINodeList
	if err := reader.List(ctx, &csiNodes); err != nil {
		return nil, fmt.Errorf("listing csinodes, %w", err)
	}
	return &Snapshot{Now: now, Pods: podList.Items, Nodes: nodeList.Items, NodeClaims: nodeClaims.Items, DaemonSets: daemonSets.Items,
		Claims: claims.Items, Volumes: volumes.Items, Classes: classes.Items, CSINodes: csiNodes.Items, InstanceTypes: map[string]*cloudprovider.InstanceType{}}, nil
}

// kinds are the objects a Snapshot holds: the informers a Cluster waits on.
func kinds() []client.Object {
	return []client.Object{&corev1.Pod{}, &corev1.Node{}, &v1.NodeClaim{}, &appsv1.DaemonSet{}, &corev1.PersistentVolumeClaim{},
		&corev1.PersistentVolume{}, &storagev1.StorageClass{}, &storagev1.CSINode{}}
}

// Cluster is the cluster as the manager's informers see it: the one view every planning loop
// reads its Snapshot from.
type Cluster struct {
	reader    client.Reader
	informers []cache.Informer
	// overlays is true when the NodeOverlay feature gate is on: snapshots then hold the
	// NodeOverlays.
	overlays bool
}

// NewCluster starts (or joins) the informers of every kind a Snapshot holds, NodeOverlays among
// them when overlays is true, so that Synced answers for all of them from the start.
func NewCluster(ctx context.Context, informers cache.Informers, reader client.Reader, overlays bool) (*Cluster, error) {
	c := &Cluster{reader: reader, overlays: overlays}
	watched := kinds()
	if overlays {
		watched = append(watched, &v1alpha1.NodeOverlay{})
	}
	for _, kind := range watched {
		informer, err := informers.GetInformer(ctx, kind, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("getting the informer of %T, %w", kind, err)
		}
		c.informers = append(c.informers, informer)
	}
	return c, nil
}

// Live is a Cluster over a reader that is always current (the API server itself, or a fake
// client in tests): synced from the start.
func Live(reader client.Reader) *Cluster { return &Cluster{reader: reader} }

// Synced is true once every informer has listed its kind: before, a snapshot could miss nodes
// or NodeClaims, and a planner would launch for room that exists or remove a node it cannot see
// is needed.
func (c *Cluster) Synced() bool {
	for _, informer := range c.informers {
		if !informer.HasSynced() {
			return false
		}
	}
	return true
}

// Snapshot reads the cluster at now; an error until the informers have synced.
func (c *Cluster) Snapshot(ctx context.Context, now time.Time) (*Snapshot, error) {
	if !c.Synced() {
		return nil, ErrNotSynced
	}
	snapshot, err := Read(ctx, c.reader, now)
	if err != nil || !c.overlays {
		return snapshot, err
	}
	var overlays v1alpha1.NodeOverlayList
	if err := c.reader.List(ctx, &overlays); err != nil {
		return nil, fmt.Errorf("listing nodeoverlays, %w", err)
	}
	snapshot.Overlays = overlays.Items
	return snapshot, nil
}

// ErrNotSynced is Snapshot's answer before the informers have listed the cluster.
var ErrNotSynced = fmt.Errorf("the cluster's informers have not synced yet")
