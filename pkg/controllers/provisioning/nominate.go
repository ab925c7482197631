package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// The plan is honoured by nominating each pod to the node planned for it, not by binding it.
// kube-scheduler (1.34, no feature gate needed) reads status.nominatedNodeName of a pod it
// has not bound: it counts the pod on that node's room when it filters nodes for any pod of
// the same or lower priority, so the small pods it spreads over the least allocated nodes no
// longer take the room planned for a large one; and at the pod's next attempt it tries the
// nominated node first and takes it when it fits, without scoring. Setting the field is an
// update no scheduling plugin requeues a pod for, so it waits for its node as before.
//
// A nomination never strands a pod: when the nominated node does not fit (gone, never Ready,
// full), kube-scheduler tries every other node, and when none fits either its preemption
// finds no victim and clears the nomination, which makes the pod pending again. While the
// node it was nominated to still awaits its pods, the pod watch nominates it again to that node
// at once (renominate), and a pass that sees it first does the same (renominations); once the
// node is open, or gone, it is planned anew (see Snapshot.pending for pods whose nominated node
// is gone). kube-scheduler takes nominations this way whenever a node of the batch turns Ready
// (it tries every pending pod that tolerates the node again): left cleared for a batch window,
// the room was anyone's, and other pods took it (plan ≠ reality, a second launch).
//
// A nomination written again may still come too late: kube-scheduler, having seen the node turn
// Ready first, gave its room to another pod and tried this one for the last time before the
// nomination came back. Nothing requeues the pod then (a nomination is a status update), and,
// nominated to a node that exists, it is not pending to a pass either, so it would wait, its
// room counted on a full node, until kube-scheduler retries it on its own (up to five minutes;
// TestAllocator's limits subtest saw it). So each renomination has a pass look again later, and
// a pass that sees such a pod displaced (state.DisplacedNominations) clears its nomination and
// plans it anew; while pods nominated to open nodes are still unbound, passes keep looking.

// nomination is a pod and the node planned for it.
type nomination struct {
	pod  *corev1.Pod
	node string
}

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// nominatePatch is the merge patch that nominates a pod to the node. It leaves the rest of the
// status as kube-scheduler last wrote it.
func nominatePatch(node string) ([]byte, error) {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": node}})
	if err != nil {
		return nil, fmt.Errorf("building the patch, %w", err)
	}
	return patch, nil
}

// nominate patches status.nominatedNodeName of each pod not already nominated to its node, at
// most launchLimit at once, and remembers it (renominations). A pod deleted meanwhile is
// skipped; one replaced by a pod of the same name is nominated all the same, which is
// harmless (see above).
func (c *Controller) nominate(ctx context.Context, nominations []nomination) error {
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	c.nominatedMu.Lock()
	for _, n := range nominations {
		c.nominated[n.pod.UID] = n.node
	}
	c.nominatedMu.Unlock()
	for _, n := range nominations {
		if n.pod.Status.NominatedNodeName == n.node {
			continue
		}
		group.Go(func() error {
			patch, err := nominatePatch(n.node)
			if err != nil {
				return err
			}
			target := &corev1.Pod{ObjectMeta: *n.pod.ObjectMeta.DeepCopy()}
			err = c.client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("nominating pod %s/%s to node %s, %w", n.pod.Namespace, n.pod.Name, n.node, err)
			}
			return nil
		})
	}
	return group.Wait()
}

// displaced are the pods nominated to a node that no longer awaits them that it has no room
// left for (state.DisplacedNominations), and whether others nominated to an open node are still
// unbound, for the pass to look again.
func (c *Controller) displaced(snapshot *state.Snapshot) ([]*corev1.Pod, bool) {
	c.nominatedMu.Lock()
	nominated := maps.Clone(c.nominated)
	c.nominatedMu.Unlock()
	displaced, unbound := snapshot.DisplacedNominations(nominated)
	return displaced, unbound > 0
}

// unnominatePatch clears the pod's nomination if it is still to node: a nomination
// kube-scheduler cleared or moved meanwhile (a preemption's), or a pod of the same name made
// anew, is the API server's to refuse (nodes.ChangedSinceRead), not ours to clear.
func unnominatePatch(pod *corev1.Pod, node string) ([]byte, error) {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": pod.UID},
		{"op": "test", "path": "/status/nominatedNodeName", "value": node},
		{"op": "remove", "path": "/status/nominatedNodeName"},
	})
	if err != nil {
		return nil, fmt.Errorf("building the patch clearing a nomination to %s, %w", node, err)
	}
	return patch, nil
}

// unnominate clears the nominations of the displaced pods of the snapshot, at most launchLimit at
// once, so that kube-scheduler no longer holds room for them on a node that has none. Each
// cleared is forgotten as nominated and, in the snapshot, unnominated, so that the pass plans it
// anew. One whose nomination changed since the read (the API server refused the patch's test:
// a refusal without details is taken for that), that is gone, or that the clearing found bound
// or deleted (kube-scheduler keeps a bound pod's nomination) is forgotten too, but left as read
// for this pass, and changed says so: the next pass sees it as it is now. A pod whose clearing
// failed stays as it was, nominated.
func (c *Controller) unnominate(ctx context.Context, displaced []*corev1.Pod) (changed bool, err error) {
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	var changedSinceRead atomic.Bool
	for _, pod := range displaced {
		group.Go(func() error {
			node := pod.Status.NominatedNodeName
			patch, err := unnominatePatch(pod, node)
			if err != nil {
				return err
			}
			target := &corev1.Pod{ObjectMeta: *pod.ObjectMeta.DeepCopy()}
			err = c.client.Status().Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch))
			if err != nil && !apierrors.IsNotFound(err) && !nodes.ChangedSinceRead(err) {
				return fmt.Errorf("clearing the nomination of pod %s/%s, %w", pod.Namespace, pod.Name, err)
			}
			c.nominatedMu.Lock()
			if c.nominated[pod.UID] == node {
				delete(c.nominated, pod.UID)
			}
			c.nominatedMu.Unlock()
			if err != nil || target.Spec.NodeName != "" || target.DeletionTimestamp != nil {
				changedSinceRead.Store(true)
				return nil
			}
			pod.Status.NominatedNodeName = ""
			return nil
		})
	}
	err = group.Wait()
	return changedSinceRead.Load(), err
}

// plannedOntoNodes are the plan's pods placed on the room of nodes still launching (launching,
// by name), each with its node: those pods are nominated at once. A pending pod planned onto
// an open node is not: kube-scheduler has just tried it there and found no room (the plan saw
// the node before a binding reached the cache), and, nominated, it would no longer be pending
// for the pass that looks again. The pods of new nodes are nominated once their nodes exist
// (launchBatch).
func plannedOntoNodes(results *scheduling.Results, launching map[string]string) []nomination {
	var out []nomination
	for _, b := range results.Bindings {
		if _, ok := launching[b.NodeName]; ok {
			out = append(out, nomination{pod: b.Pod, node: b.NodeName})
		}
	}
	return out
}

// renominate nominates the pod again, at once, to the node it was last nominated to, when
// kube-scheduler took the nomination (it tried the pod before its node was Ready) and that node
// still awaits its pods (launching, or its not-ready taints not all lifted yet) and is
// standing; true when it did. Otherwise the pod is left to the next pass, as any pending pod.
func (c *Controller) renominate(ctx context.Context, key types.NamespacedName) (bool, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, key, pod); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !pods.IsProvisionable(pod) {
		return false, nil
	}
	c.nominatedMu.Lock()
	name, ok := c.nominated[pod.UID]
	c.nominatedMu.Unlock()
	if !ok {
		return false, nil
	}
	node := &corev1.Node{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !renominatable(node) {
		return false, nil
	}
	if err := c.nominate(ctx, []nomination{{pod: pod, node: name}}); err != nil {
		return false, err
	}
	log.FromContext(ctx).V(1).Info("nominated the pod again to its launching node", "node", name)
	return true, nil
}

// renominatable is true for a node a pod that lost its nomination to it is nominated to again:
// standing, and still awaiting its pods or, launched by Karpenter, not initialized yet (a
// startup taint still on it, or a GPU its device plugin has yet to report: kube-scheduler
// found no room there for now, and the node's room stays the pod's).
func renominatable(node *corev1.Node) bool {
	return node.DeletionTimestamp == nil && (nodes.AwaitsItsPods(node) || !nodes.IsInitialized(node))
}

// renominations are the pods to nominate again to the node they were nominated to: those
// kube-scheduler took the nomination from (it tried them before their node was Ready) and that
// renominate has not yet, while that node still awaits its pods and is standing. The snapshot
// counts each on its node again, so the pass does not plan them anew: a plan made again for
// such pods alone may give the room of a pod confined to few instance types to one that fits
// anywhere, and launch a node for the first. Pods bound or gone are forgotten.
func (c *Controller) renominations(snapshot *state.Snapshot) []nomination {
	awaiting := sets.New[string]()
	for i := range snapshot.Nodes {
		if node := &snapshot.Nodes[i]; renominatable(node) {
			awaiting.Insert(node.Name)
		}
	}
	c.nominatedMu.Lock()
	defer c.nominatedMu.Unlock()
	waiting := sets.New[types.UID]()
	var out []nomination
	for i := range snapshot.Pods {
		pod := &snapshot.Pods[i]
		node, ok := c.nominated[pod.UID]
		if !ok || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pods.IsTerminal(pod) {
			continue
		}
		waiting.Insert(pod.UID)
		if awaiting.Has(node) && pods.IsProvisionable(pod) {
			out = append(out, nomination{pod: pod.DeepCopy(), node: node})
			pod.Status.NominatedNodeName = node
		}
	}
	for uid := range c.nominated {
		if !waiting.Has(uid) {
			delete(c.nominated, uid)
		}
	}
	return out
}
