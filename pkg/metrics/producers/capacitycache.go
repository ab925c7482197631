package producers

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/metrics/producers/capacity"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// CapacityCache shares what the capacity producers compute from nodes and pods between them and
// across periods, and keeps each value until an event says that what it was computed from
// changed: a node's reservation until the node or one of its pods changes, a nodeSelector's
// reservation until any node or bound pod changes, the unschedulable pods until a pod without a
// node changes. A value dropped is recomputed from the reader when it is next asked for, so
// nothing is older than the events seen; nothing expires with time.
//
// NodeChanged and PodChanged must see every node and pod event of the informers the reader
// reads. The informer updates its store before it hands the event out, so a value computed from
// the store is at least as new as the events seen. Until the cache has seen a node event and a
// pod event it keeps nothing: a reader no informer feeds (a test's client) is read every time.
// A nil *CapacityCache keeps nothing either. The zero value is ready to use, and safe for
// concurrent use.
type CapacityCache struct {
	mu sync.Mutex
	// events counts the events seen. A value is computed after reading the count, and kept only
	// if no event it depends on came since: an event while it was computed may not be in it.
	events              uint64
	nodesSeen, podsSeen bool
	// boundChanged and unboundChanged are the count at the last event that can change a group's
	// reservation (a node's, a bound pod's), and at the last of a pod without a node.
	boundChanged, unboundChanged uint64
	// nodes has an entry for each node an event announced, until its deletion.
	nodes map[string]*nodeEntry
	// groups are the reservations of each nodeSelector (by selectorString), until any node or
	// bound pod changes.
	groups map[string]groupReservation
	// unschedulable is the unschedulable pods, when kept.
	unschedulable *[]*corev1.Pod
}

type nodeEntry struct {
	// changed is the count at the last event of the node or of a pod bound to it.
	changed uint64
	// reservation is the node's, nil when not kept.
	reservation map[corev1.ResourceName]capacity.Reservation
}

// groupReservation is the reservation of the nodes a nodeSelector selects.
type groupReservation struct {
	// nodes is how many nodes the selector selects, whether they take pods or not.
	nodes        int
	reservations map[corev1.ResourceName]capacity.Reservation
}

// NodeChanged records a node event: old is nil for a creation, updated nil for a deletion. An
// update of nothing a producer reads (a heartbeat) drops nothing.
func (c *CapacityCache) NodeChanged(old, updated *corev1.Node) {
	if c == nil || (old != nil && updated != nil && !NodeInputsChanged(old, updated)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	c.nodesSeen = true
	c.boundChanged = c.events
	clear(c.groups)
	if updated == nil {
		delete(c.nodes, old.Name)
		return
	}
	if c.nodes == nil {
		c.nodes = map[string]*nodeEntry{}
	}
	c.nodes[updated.Name] = &nodeEntry{changed: c.events}
}

// PodChanged records a pod event: old is nil for a creation, updated nil for a deletion. Any
// change counts: what a pod reserves depends on much of it, and pods, unlike nodes, do not
// report a heartbeat. An informer's resync, which hands out the same object again, drops
// nothing.
func (c *CapacityCache) PodChanged(old, updated *corev1.Pod) {
	if c == nil || (old != nil && updated != nil && old.ResourceVersion != "" && old.ResourceVersion == updated.ResourceVersion) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	c.podsSeen = true
	for _, pod := range []*corev1.Pod{old, updated} {
		if pod == nil {
			continue
		}
		if pod.Spec.NodeName == "" {
			c.unboundChanged = c.events
			c.unschedulable = nil
			continue
		}
		c.boundChanged = c.events
		clear(c.groups)
		if entry, ok := c.nodes[pod.Spec.NodeName]; ok {
			entry.changed = c.events
			entry.reservation = nil
		}
	}
}

// NodeInputsChanged reports whether a node update changes anything a producer reads of a node:
// its labels, whether it takes pods, its taints and its allocatable.
func NodeInputsChanged(old, updated *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(old.Labels, updated.Labels) ||
		old.Spec.Unschedulable != updated.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, updated.Status.Allocatable) ||
		nodes.ReadyStatus(old) != nodes.ReadyStatus(updated)
}

// begin returns the count of events a computation starting now will have seen, and whether the
// cache is fed at all.
func (c *CapacityCache) begin() (events uint64, fed bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events, c.nodesSeen && c.podsSeen
}

// reservation is the reservation of the nodes selector selects, as capacity.Reserve totals it.
func (c *CapacityCache) reservation(ctx context.Context, reader client.Reader, selector map[string]string) (groupReservation, error) {
	key := selectorString(selector)
	at, fed := c.begin()
	if fed {
		c.mu.Lock()
		kept, ok := c.groups[key]
		c.mu.Unlock()
		if ok {
			return kept, nil
		}
	}
	group, err := nodesMatching(ctx, reader, selector)
	if err != nil {
		return groupReservation{}, err
	}
	parts := make([]map[corev1.ResourceName]capacity.Reservation, 0, len(group))
	for i := range group {
		// Like capacity.Reserve, a node that takes no pods counts nothing; its pods are not read.
		if !nodes.IsReady(&group[i]) || group[i].Spec.Unschedulable {
			continue
		}
		part, err := c.nodeReservation(ctx, reader, &group[i], at, fed)
		if err != nil {
			return groupReservation{}, err
		}
		parts = append(parts, part)
	}
	result := groupReservation{nodes: len(group), reservations: capacity.Sum(parts...)}
	if fed {
		c.mu.Lock()
		if c.boundChanged <= at {
			if c.groups == nil {
				c.groups = map[string]groupReservation{}
			}
			c.groups[key] = result
		}
		c.mu.Unlock()
	}
	return result, nil
}

// nodeReservation is the reservation of one node that takes pods.
func (c *CapacityCache) nodeReservation(ctx context.Context, reader client.Reader, node *corev1.Node, at uint64, fed bool) (map[corev1.ResourceName]capacity.Reservation, error) {
	if fed {
		c.mu.Lock()
		var kept map[corev1.ResourceName]capacity.Reservation
		if entry, ok := c.nodes[node.Name]; ok {
			kept = entry.reservation
		}
		c.mu.Unlock()
		if kept != nil {
			return kept, nil
		}
	}
	bound, err := podsOn(ctx, reader, node.Name)
	if err != nil {
		return nil, err
	}
	part := capacity.Reserve([]corev1.Node{*node}, bound)
	if fed {
		c.mu.Lock()
		// Kept only for a node still announced, with no event of its own since the count read.
		if entry, ok := c.nodes[node.Name]; ok && entry.changed <= at {
			entry.reservation = part
		}
		c.mu.Unlock()
	}
	return part, nil
}

// unschedulablePods are the pods without a node that the scheduler could not place. They are
// shared by every caller: read only.
func (c *CapacityCache) unschedulablePods(ctx context.Context, reader client.Reader) ([]*corev1.Pod, error) {
	at, fed := c.begin()
	if fed {
		c.mu.Lock()
		kept := c.unschedulable
		c.mu.Unlock()
		if kept != nil {
			return *kept, nil
		}
	}
	unscheduled, err := podsOn(ctx, reader, "")
	if err != nil {
		return nil, err
	}
	var pending []*corev1.Pod
	for i := range unscheduled {
		if pods.IsUnschedulable(&unscheduled[i]) {
			pending = append(pending, &unscheduled[i])
		}
	}
	if fed {
		c.mu.Lock()
		if c.unboundChanged <= at {
			c.unschedulable = &pending
		}
		c.mu.Unlock()
	}
	return pending, nil
}
