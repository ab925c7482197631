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
// heap up to date with the nodes opened and changed since it was last asked. A pass asks about
// few shapes, each many times in a row (sortPods places the pods of a shape one after another),
// and each placement changes one node, where weighing every node each time costs the number of
// nodes per pod: on a real catalogue, where a new node may be cheaper than most growths, the
// largest share of a pass.
//
// It holds only while place is the only change to a node's use and types, as in pack; shrink
// and repack, which change nodes otherwise, do not ask.
type growthIndex struct {
	byShape map[string]*growthHeap
	// changed are the nodes opened in the pass that place changed, once per change, in order.
	changed []*node
	key     []byte
	aside   []*growthEntry
}

// asideLimit is how many nodes cheaper to grow that refuse the pod (their topology, their room
// left in the cheapest type) a search sets aside before it weighs every node instead: where
// most nodes refuse a pod, taking them off the heap one by one costs more than the walk. A
// variable so that a test can have every search walk, and compare the plans.
var asideLimit = 64

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
	h := gi.heapFor(p.requests)
	opened := s.nodes[s.existing:]
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
		// A finite growth price means a type of the node holds the pod, so the node could grow.
		if n := e.node; !fitsWith(n.candidates[n.first].alloc, n.used, p.requests) && s.compatibleNew(n, p, a, allowed) {
			found = n
			break
		}
	}
	weighAll := found == nil && len(aside) == asideLimit && h.Len() > 0
	for _, e := range aside {
		heap.Push(h, e)
	}
	gi.aside = aside
	if weighAll {
		return cheapestGrowth(s.growable(p, a, allowed, math.MaxInt), p.requests)
	}
	return found
}

// heapFor is the heap of the nodes by their growth price for requests, made empty the first
// time requests are asked about.
func (gi *growthIndex) heapFor(requests resources) *growthHeap {
	gi.key = gi.key[:0]
	for _, r := range requests {
		gi.key = strconv.AppendInt(gi.key, r, 36)
		gi.key = append(gi.key, ',')
	}
	if h, ok := gi.byShape[string(gi.key)]; ok {
		return h
	}
	h := &growthHeap{requests: slices.Clone(requests)}
	gi.byShape[string(gi.key)] = h
	return h
}

// growthHeap orders nodes by what growing each for requests costs, as cheapestGrowth ranks
// them; a node that cannot grow for requests is left out.
type growthHeap struct {
	requests resources
	entries  []*growthEntry
	// at is, by node seq, the node's index in entries, or -1.
	at []int
	// opened is how many of the nodes opened in the pass the heap has seen, read how many of
	// growthIndex.changed.
	opened, read int
}

type growthEntry struct {
	node         *node
	growth, room float64
}

// update sets the node's place by its growth price now.
func (h *growthHeap) update(n *node) {
	for len(h.at) <= n.seq {
		h.at = append(h.at, -1)
	}
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
