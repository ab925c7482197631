package provisioning

import (
	"time"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

// earlyHold spaces an open batch's early launches out. An early pass comes every idle gap while
// kube-scheduler marks a burst, and finds a few more nodes filled each time: launched at once,
// each pass's few would make a cloud call of their own, and a burst kube-scheduler marks over two
// minutes made a call for every three nodes (189 calls for 529 nodes in a 1,000-pod run of the
// latency harness, docs/benchmarks.md). So the filled nodes of a launch key (the nodes one call
// can launch together) launch once they fill a group (minLaunchGroup), or once the key's filled
// nodes have been held one idle gap: at most a call per key every other early pass, each pod
// waiting at most one gap more. The closing pass launches whatever is left and resets it.
//
// Only the allocator's loop uses it, one pass at a time: it needs no lock.
type earlyHold struct {
	// since is when each launch key's filled nodes were first held.
	since map[string]time.Time
}

// release returns the filled nodes to launch now, holding the others, and forgets the keys no
// filled node has any more (their pods went elsewhere).
func (h *earlyHold) release(filled []*scheduling.NewNode, now time.Time, wait time.Duration) []*scheduling.NewNode {
	byKey := map[string][]*scheduling.NewNode{}
	var keys []string
	// Keyed once per distinct pool, labels and candidates, as groupLaunches groups them.
	var lists candidateLists
	keyed := map[groupKey]string{}
	for _, n := range filled {
		group := lists.groupKey(n)
		key, ok := keyed[group]
		if !ok {
			key = launchKey(n, lists.lists[group.list])
			keyed[group] = key
		}
		if _, ok := byKey[key]; !ok {
			keys = append(keys, key)
		}
		byKey[key] = append(byKey[key], n)
	}
	held := map[string]time.Time{}
	var out []*scheduling.NewNode
	for _, key := range keys {
		nodes := byKey[key]
		since, wasHeld := h.since[key]
		if len(nodes) >= minLaunchGroup || (wasHeld && now.Sub(since) >= wait) {
			out = append(out, nodes...)
			continue
		}
		if !wasHeld {
			since = now
		}
		held[key] = since
	}
	h.since = held
	return out
}

// reset forgets every held key: the batch closed, and its closing pass launches every node.
func (h *earlyHold) reset() {
	h.since = nil
}
