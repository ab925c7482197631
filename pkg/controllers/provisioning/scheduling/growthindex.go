package scheduling

import (
	"container/heap"
	"math"
	"slices"
	"strconv"
)

// growthIndex finds, of the nodes opened in a pass, the one whose growth for a pod costs least
// as cheapestGrowth ranks them, without weighing every node at every pod: for each shape of
// requests asked about it keeps the nodes in a heap in cheapestGrowth's order, and brings the
// heap up to date with the nodes opened and placed on since it was last asked. A pass asks
// about few shapes, mostly many times in a row (sortPods orders a class's pods by size), and
// each placement changes one node, where weighing every node each time costs the number of
// nodes per pod: on a real catalogue, where a new node may be cheaper than most growths, it
// was the largest share of a pass.
//
// It holds while place is the only change to a node's use and types, as when pods are placed
// one at a time (packPods); shrink and repack, which change nodes otherwise, come after.
type growthIndex struct {
	byShape map[string]*growthHeap
	// changed are the nodes opened in the pass that place changed, once per change, in order.
	changed []*node
	// walk has every search walk the nodes instead, for a test to compare the plans.
	walk  bool
	key   []byte
	aside []*growthEntry
}

// asideLimit is how many nodes cheaper to grow that refuse the pod (its topology, taints or
// host ports, or room left in the node's cheapest type) a search sets aside before it walks
// every node instead: where most nodes refuse a pod, taking them off the heap one by one costs
// more than the walk.
const asideLimit = 64

func newGrowthIndex() *growthIndex {
	return &growthIndex{byShape: map[string]*growthHeap{}}
}

// changedNode records that place changed a node opened in the pass.
func (gi *growthIndex) changedNode(n *node) { gi.changed = append(gi.changed, n) }

// cheapestGrowthOfAll is cheapestGrowth(s.growable(p, a, allowed, math.MaxInt), p.requests): of
// every node opened in the pass that accepts the pod and could grow to hold it, the one whose
// growth costs least.
func (s *scheduler) cheapestGrowthOfAll(p *podInfo, a *attempt, allowed []domainSet) *node {
	gi := s.growth
	if gi.walk {
		return s.walkGrowths(p, a, allowed)
	}
	h := gi.heapFor(p.requests, len(gi.changed))
	opened := s.nodes[s.existing:]
	h.replay++
	for _, n := range opened[h.opened:] {
		h.update(n)
	}
	h.opened = len(opened)
	for _, n := range gi.changed[h.read:] {
		h.update(n)
	}
	h.read = len(gi.changed)

	var found *node
	aside := gi.aside[:0]
	for h.Len() > 0 && len(aside) < asideLimit {
		e := heap.Pop(h).(*growthEntry)
		aside = append(aside, e)
		// A finite growth price means one of the node's types after its cheapest holds the pod,
		// so the node's maxAlloc (the largest of its types' in each resource) does too: it
		// could grow, as growable asks.
		if n := e.node; !fitsWith(n.candidates[n.first].alloc, n.used, p.requests) && s.compatibleNew(n, p, a, allowed) {
			found = n
			break
		}
	}
	walk := found == nil && len(aside) == asideLimit
	for _, e := range aside {
		heap.Push(h, e)
	}
	gi.aside = aside
	if walk {
		return s.walkGrowths(p, a, allowed)
	}
	return found
}

// walkGrowths is the cheapest growth found by weighing every open node.
func (s *scheduler) walkGrowths(p *podInfo, a *attempt, allowed []domainSet) *node {
	return cheapestGrowth(s.growable(p, a, allowed, math.MaxInt), p.requests)
}

// heapFor is the heap of the nodes by their growth price for requests; one made the first time
// requests are asked about prices every node as it stands, so it starts having read the
// changes logged so far (changed).
func (gi *growthIndex) heapFor(requests resources, changed int) *growthHeap {
	gi.key = gi.key[:0]
	for _, r := range requests {
		gi.key = strconv.AppendInt(gi.key, r, 36)
		gi.key = append(gi.key, ',')
	}
	if h, ok := gi.byShape[string(gi.key)]; ok {
		return h
	}
	h := &growthHeap{requests: slices.Clone(requests), read: changed}
	gi.byShape[string(gi.key)] = h
	return h
}

// growthHeap orders nodes by what growing each for requests costs, as cheapestGrowth ranks
// them; a node that cannot grow for requests is left out.
type growthHeap struct {
	requests resources
	entries  []*growthEntry
	// at is, by node seq, the node's index in entries, or -1; updated the replay in which the
	// node was last priced.
	at, updated []int
	// opened is how many of the nodes opened in the pass the heap has seen, read how many of
	// growthIndex.changed; replay counts the searches that brought it up to date.
	opened, read, replay int
}

type growthEntry struct {
	node         *node
	growth, room float64
}

// update sets the node's place by its growth price now, once per replay: a node placed on
// several times since the last search is priced once.
func (h *growthHeap) update(n *node) {
	for len(h.at) <= n.seq {
		h.at, h.updated = append(h.at, -1), append(h.updated, 0)
	}
	if h.updated[n.seq] == h.replay {
		return
	}
	h.updated[n.seq] = h.replay
	growth, room := growthPrice(n, h.requests)
	i := h.at[n.seq]
	switch {
	case math.IsInf(growth, 1):
		if i >= 0 {
			heap.Remove(h, i)
		}
	case i >= 0:
		h.entries[i].growth, h.entries[i].room = growth, room
		heap.Fix(h, i)
	default:
		heap.Push(h, &growthEntry{node: n, growth: growth, room: room})
	}
}

func (h *growthHeap) Len() int { return len(h.entries) }

// Less is cheapestGrowth's order: the growth costing least, the roomiest after it on a tie,
// then the node opened first.
func (h *growthHeap) Less(i, j int) bool {
	a, b := h.entries[i], h.entries[j]
	if a.growth != b.growth {
		return a.growth < b.growth
	}
	if a.room != b.room {
		return a.room > b.room
	}
	return a.node.seq < b.node.seq
}

func (h *growthHeap) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.at[h.entries[i].node.seq], h.at[h.entries[j].node.seq] = i, j
}

func (h *growthHeap) Push(x any) {
	e := x.(*growthEntry)
	h.at[e.node.seq] = len(h.entries)
	h.entries = append(h.entries, e)
}

func (h *growthHeap) Pop() any {
	e := h.entries[len(h.entries)-1]
	h.entries = h.entries[:len(h.entries)-1]
	h.at[e.node.seq] = -1
	return e
}
