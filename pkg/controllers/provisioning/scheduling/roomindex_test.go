package scheduling

import (
	"slices"
	"testing"
)

// indexedNode is a node whose cheapest instance type has cpu of allocatable (milli-cpu), with
// used of it taken, and 4Gi of memory, seq Gi of it taken, and 10 pods, one taken.
func indexedNode(seq int, cpu, used int64) *node {
	return &node{seq: seq, candidates: []*instanceType{{alloc: resources{cpu, 4 << 30, 10}}}, used: resources{used, int64(seq) << 30, 1}}
}

func TestRoomIndex(t *testing.T) {
	nodes := []*node{
		indexedNode(0, 2000, 1500), // room 500
		indexedNode(1, 4000, 1000), // room 3000
		indexedNode(2, 1000, 1000), // room 0
		indexedNode(3, 2000, 1500), // room 500, opened after node 0
		indexedNode(4, 8000, 7000), // room 1000
	}
	seqs := func(visit func(func(*node) bool), limit int) []int {
		var out []int
		visit(func(n *node) bool {
			out = append(out, n.seq)
			return len(out) < limit
		})
		return out
	}
	cases := []struct {
		name    string
		removed []int
		// moved node 1 to this much used before the query, when not 0.
		movedUsed int64
		visit     func(ri *roomIndex) func(func(*node) bool)
		limit     int
		want      []int
	}{
		{name: "room of at least 500m, least first, in opening order on a tie", visit: withRoom(500), limit: 10, want: []int{0, 3, 4, 1}},
		{name: "room of at least 0 is every node", visit: withRoom(0), limit: 10, want: []int{2, 0, 3, 4, 1}},
		{name: "more room than any node has", visit: withRoom(3001), limit: 10, want: nil},
		{name: "the visit stops when asked", visit: withRoom(500), limit: 2, want: []int{0, 3}},
		{name: "nodes without the memory asked for are passed", visit: func(ri *roomIndex) func(func(*node) bool) {
			return func(visit func(*node) bool) { ri.withRoomFor(resources{100, 2 << 30, 1}, visit) }
		}, limit: 10, want: []int{0, 1}},
		{name: "nodes without the pods asked for are passed", visit: func(ri *roomIndex) func(func(*node) bool) {
			return func(visit func(*node) bool) { ri.withRoom(100, 0, 10, visit) }
		}, limit: 10, want: nil},
		{name: "roomiest first", visit: func(ri *roomIndex) func(func(*node) bool) { return ri.roomiestFirst }, limit: 10, want: []int{1, 4, 3, 0, 2}},
		{name: "a removed node is not visited", removed: []int{0, 4}, visit: withRoom(500), limit: 10, want: []int{3, 1}},
		{name: "a node re-inserted after its room changed moves", movedUsed: 3800, visit: withRoom(100), limit: 10, want: []int{1, 0, 3, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ri := newRoomIndex()
			var copies []*node
			for _, n := range nodes {
				n := *n
				n.used = slices.Clone(n.used)
				copies = append(copies, &n)
				ri.insert(&n)
			}
			for _, i := range c.removed {
				ri.remove(copies[i])
			}
			if c.movedUsed != 0 {
				ri.remove(copies[1])
				copies[1].used[0] = c.movedUsed
				ri.insert(copies[1])
			}
			if got := seqs(c.visit(ri), c.limit); !slices.Equal(got, c.want) {
				t.Errorf("visited %v, want %v", got, c.want)
			}
		})
	}
}

func withRoom(cpu int64) func(ri *roomIndex) func(func(*node) bool) {
	return func(ri *roomIndex) func(func(*node) bool) {
		return func(visit func(*node) bool) { ri.withRoom(cpu, 0, 0, visit) }
	}
}
