package scheduling

import (
	"github.com/google/btree"
)

// fitCandidates is how many compatible nodes placeOnNewNodes weighs for a best fit, and for the
// cheapest growth where a new node could not be cheaper, and shrink for a move or a swap, before
// it takes the best of them: the index visits them in the order that makes the best likely
// among the first. The number was chosen on the benchmark workload; docs/benchmarks.md has the
// plans' cost on both catalogues for 16 to 256.
const fitCandidates = 64

// roomIndex orders the nodes opened in the pass by the cpu their cheapest instance type has
// left, so that placing a pod visits the nodes with room for it, tightest first, or the roomiest
// to grow, instead of every open node. Each entry also holds the node's memory and pod room, so
// that a node whose cpu fits but whose memory does not (most of those a search passes, as
// requests of cpu and memory vary apart) is skipped without reading the node.
type roomIndex struct {
	tree *btree.BTreeG[roomEntry]
}

// roomEntry is a node with what its cheapest instance type has left, in the first three
// resources as newResourceIndex places them, when it was last inserted.
type roomEntry struct {
	cpu, memory, pods int64
	seq               int
	node              *node
}

func newRoomIndex() *roomIndex {
	return &roomIndex{tree: btree.NewG(16, func(a, b roomEntry) bool {
		if a.cpu != b.cpu {
			return a.cpu < b.cpu
		}
		return a.seq < b.seq
	})}
}

// cpuRoom is what a node's cheapest instance type has left of cpu, as newResourceIndex places it.
func cpuRoom(n *node) int64 { return n.candidates[n.first].alloc[0] - n.used[0] }

func (ri *roomIndex) insert(n *node) {
	alloc := n.candidates[n.first].alloc
	e := roomEntry{cpu: alloc[0] - n.used[0], memory: alloc[1] - n.used[1], pods: alloc[2] - n.used[2], seq: n.seq, node: n}
	n.roomKey = e.cpu
	ri.tree.ReplaceOrInsert(e)
}

func (ri *roomIndex) remove(n *node) { ri.tree.Delete(roomEntry{cpu: n.roomKey, seq: n.seq}) }

// withRoom calls visit with the nodes that have at least cpu, memory and pods of room, least cpu
// room first, until it returns false.
func (ri *roomIndex) withRoom(cpu, memory, pods int64, visit func(*node) bool) {
	ri.tree.AscendGreaterOrEqual(roomEntry{cpu: cpu, seq: -1}, func(e roomEntry) bool {
		return e.memory < memory || e.pods < pods || visit(e.node)
	})
}

// withRoomFor is withRoom for what requests ask of cpu, memory and pods.
func (ri *roomIndex) withRoomFor(requests resources, visit func(*node) bool) {
	ri.withRoom(requests[0], requests[1], requests[2], visit)
}

// roomiestFirst calls visit with every node, most cpu room first, until it returns false.
func (ri *roomIndex) roomiestFirst(visit func(*node) bool) {
	ri.tree.Descend(func(e roomEntry) bool { return visit(e.node) })
}
