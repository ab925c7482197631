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
// to grow, instead of every open node.
type roomIndex struct {
	tree *btree.BTreeG[*node]
	// pivot is a probe that sorts before every node with its room.
	pivot node
}

func newRoomIndex() *roomIndex {
	return &roomIndex{tree: btree.NewG(16, func(a, b *node) bool {
		if a.roomKey != b.roomKey {
			return a.roomKey < b.roomKey
		}
		return a.seq < b.seq
	})}
}

// cpuRoom is what a node's cheapest instance type has left of cpu, as newResourceIndex places it.
func cpuRoom(n *node) int64 { return n.candidates[n.first].alloc[0] - n.used[0] }

func (ri *roomIndex) insert(n *node) {
	n.roomKey = cpuRoom(n)
	ri.tree.ReplaceOrInsert(n)
}

func (ri *roomIndex) remove(n *node) { ri.tree.Delete(n) }

// withRoom calls visit with the nodes that have at least cpu of cpu room, least room first,
// until it returns false.
func (ri *roomIndex) withRoom(cpu int64, visit func(*node) bool) {
	ri.pivot.roomKey, ri.pivot.seq = cpu, -1
	ri.tree.AscendGreaterOrEqual(&ri.pivot, visit)
}

// roomiestFirst calls visit with every node, most cpu room first, until it returns false.
func (ri *roomIndex) roomiestFirst(visit func(*node) bool) { ri.tree.Descend(visit) }
