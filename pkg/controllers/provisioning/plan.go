package provisioning

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

// Plan is what one provisioning pass decides on a Snapshot.
type Plan struct {
	// Pending are the pods a new node would help, in a stable order.
	Pending []*corev1.Pod
	// Results place them: onto the room of existing and launching nodes (Bindings), onto new
	// nodes, or nowhere, with the reason. Nil when no pod is pending.
	Results *scheduling.Results
}

// Plan places the snapshot's pending pods on the room of its nodes (those still launching
// included) and on new nodes of the provisioners, each given with its instance types and,
// as Status.Resources, what counts against its limits (Limited). It does no I/O: the
// controller and `kubectl karpenter plan` run it alike.
func (c *Snapshot) Plan(provisioners []scheduling.Provisioner) Plan {
	pending := c.pending()
	if len(pending) == 0 {
		return Plan{}
	}
	return Plan{Pending: pending, Results: scheduling.Schedule(c.WithVolumes(scheduling.Input{
		Pods:          pending,
		Provisioners:  provisioners,
		Nodes:         c.schedulingNodes(),
		DaemonSetPods: c.daemonSetPods(),
	}))}
}

// Limited is the provisioner as Plan takes it: with its instance types, and used, what counts
// against its limits, as its status's resources.
func Limited(p *v1alpha5.Provisioner, instanceTypes []*cloudprovider.InstanceType, used corev1.ResourceList) scheduling.Provisioner {
	limited := p.DeepCopy()
	limited.Status.Resources = used
	return scheduling.Provisioner{Provisioner: limited, InstanceTypes: instanceTypes}
}

// Used is what the snapshot's nodes of the provisioner hold against its limits; the
// controller adds the launches it has in flight.
func (c *Snapshot) Used(provisioner string) corev1.ResourceList {
	return NewLedger().Used(provisioner, c.provisionerNodes(provisioner))
}

// ReadSnapshot lists every pod, node, DaemonSet, persistent volume claim, persistent volume and
// storage class, at now; the caller adds the instance types of the Provisioners it plans for.
func ReadSnapshot(ctx context.Context, reader client.Reader, now time.Time) (*Snapshot, error) {
	var podList corev1.PodList
	if err := reader.List(ctx, &podList); err != nil {
		return nil, fmt.Errorf("listing pods, %w", err)
	}
	var nodeList corev1.NodeList
	if err := reader.List(ctx, &nodeList); err != nil {
		return nil, fmt.Errorf("listing nodes, %w", err)
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
	return &Snapshot{Now: now, Pods: podList.Items, Nodes: nodeList.Items, DaemonSets: daemonSets.Items,
		Claims: claims.Items, Volumes: volumes.Items, Classes: classes.Items, CSINodes: csiNodes.Items, InstanceTypes: map[string]*cloudprovider.InstanceType{}}, nil
}
