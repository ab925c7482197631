package scheduling

import (
	"math"
	"slices"
	"testing"
)

func TestBatchPack(t *testing.T) {
	// Resources are cpu, memory and pods, in milli-units; the large type holds four pods for
	// twice the small one's price.
	small := packType{alloc: resources{1000, 1000, 10000}, price: 1}
	large := packType{alloc: resources{4000, 4000, 40000}, price: 2}
	pod := resources{1000, 1000, 1000}
	own := func(int) bool { return true }
	for _, tc := range []struct {
		name    string
		types   []packType
		fixed   []packFixed
		shapes  []packShape
		current []packedBin
		// price is the packing's, and ok false where it should keep the current one.
		price float64
		ok    bool
	}{{
		name:    "pods on one large node rather than one small node each",
		types:   []packType{small, large},
		shapes:  []packShape{{requests: pod, count: 4}},
		current: []packedBin{{typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}},
		price:   2, ok: true,
	}, {
		name:    "a node that launches anyway grows to hold the others",
		types:   []packType{small, large},
		fixed:   []packFixed{{used: pod, accepts: own}},
		shapes:  []packShape{{requests: pod, count: 3}},
		current: []packedBin{{typ: 0, fixed: 0, counts: []int{0}}, {typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}},
		price:   2, ok: true,
	}, {
		name:    "a node that refuses the others keeps its size",
		types:   []packType{small, large},
		fixed:   []packFixed{{used: pod, accepts: func(int) bool { return false }}},
		shapes:  []packShape{{requests: pod, count: 3}},
		current: []packedBin{{typ: 0, fixed: 0, counts: []int{0}}, {typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}, {typ: 0, fixed: -1, counts: []int{1}}},
		price:   3, ok: true,
	}, {
		name:    "no packing beats the current one",
		types:   []packType{small, large},
		shapes:  []packShape{{requests: pod, count: 4}},
		current: []packedBin{{typ: 1, fixed: -1, counts: []int{4}}},
		ok:      false,
	}, {
		name:    "a pod no type holds",
		types:   []packType{small},
		shapes:  []packShape{{requests: resources{2000, 1000, 1000}, count: 1}},
		current: []packedBin{{typ: 0, fixed: -1, counts: []int{1}}},
		ok:      false,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			bins, ok := batchPack(tc.types, resources{0, 0, 0}, tc.fixed, tc.shapes, tc.current, func() bool { return false })
			if ok != tc.ok {
				t.Fatalf("ok %t, want %t (bins %v)", ok, tc.ok, bins)
			}
			if !ok {
				return
			}
			if !holdsEvery(bins, tc.shapes) {
				t.Errorf("bins %v do not hold every pod of %v once", bins, tc.shapes)
			}
			fixedSeen := make([]int, len(tc.fixed))
			total := 0.0
			// The packing's new bins replace the current ones' that may be dropped.
			if news := len(bins) - len(tc.fixed); news > len(tc.current)-len(tc.fixed) {
				t.Errorf("%d new bins, more than the %d the current packing has", news, len(tc.current)-len(tc.fixed))
			}
			for _, b := range bins {
				if b.fixed < 0 && !slices.ContainsFunc(b.counts, func(n int) bool { return n > 0 }) {
					t.Errorf("new bin %v holds no pod", b)
				}
				used := resources{0, 0, 0}
				if b.fixed >= 0 {
					used = used.plus(tc.fixed[b.fixed].used)
					fixedSeen[b.fixed]++
				}
				for s, n := range b.counts {
					if n > 0 && b.fixed >= 0 && !tc.fixed[b.fixed].accepts(s) {
						t.Errorf("bin %v holds shape %d, which its fixed bin refuses", b, s)
					}
					for range n {
						used.add(tc.shapes[s].requests)
					}
				}
				if !within(tc.types[b.typ].alloc, used) {
					t.Errorf("bin %v uses %v, more than its type's %v", b, used, tc.types[b.typ].alloc)
				}
				total += tc.types[b.typ].price
			}
			for f, n := range fixedSeen {
				if n != 1 {
					t.Errorf("fixed bin %d in %d bins, want 1", f, n)
				}
			}
			if math.Abs(total-tc.price) > 1e-9 {
				t.Errorf("bins cost %g, want %g (bins %v)", total, tc.price, bins)
			}
		})
	}
}

// TestAbsorb: new bins beyond the limit are taken apart, each pod to the bin it makes dearer the
// least, growing its type; a bin with a pod no other bin can hold stays.
func TestAbsorb(t *testing.T) {
	small := packType{alloc: resources{2000, 2000, 10000}, price: 1}
	large := packType{alloc: resources{4000, 4000, 40000}, price: 1.5}
	pod := resources{1000, 1000, 1000}
	kind := packKind{used: pod, accepts: []bool{true, true}, members: []int{0, 1}}
	for _, tc := range []struct {
		name  string
		kinds []packKind
		bins  []packPattern
		limit int
		want  []packPattern
	}{{
		name:  "a new bin's pods go to the fixed bins, one of them grown",
		kinds: []packKind{kind},
		bins:  []packPattern{{typ: 0, kind: 0, counts: []int{1, 0}}, {typ: 0, kind: 0, counts: []int{0, 0}}, {typ: 0, kind: -1, counts: []int{2, 0}}},
		// The first pod fills the second bin's room; the second grows the first bin, the first of
		// the two it would make as dear.
		want: []packPattern{{typ: 1, kind: 0, counts: []int{2, 0}}, {typ: 0, kind: 0, counts: []int{1, 0}}},
	}, {
		name:  "within the limit, nothing changes",
		kinds: []packKind{kind},
		bins:  []packPattern{{typ: 0, kind: 0, counts: []int{1, 0}}, {typ: 0, kind: -1, counts: []int{2, 0}}},
		limit: 1,
		want:  []packPattern{{typ: 0, kind: 0, counts: []int{1, 0}}, {typ: 0, kind: -1, counts: []int{2, 0}}},
	}, {
		name:  "fixed bins that refuse the pods leave the new bin",
		kinds: []packKind{{used: pod, accepts: []bool{false, false}, members: []int{0}}},
		bins:  []packPattern{{typ: 0, kind: 0, counts: []int{0, 0}}, {typ: 0, kind: -1, counts: []int{2, 0}}},
		want:  []packPattern{{typ: 0, kind: 0, counts: []int{0, 0}}, {typ: 0, kind: -1, counts: []int{2, 0}}},
	}, {
		name:  "a second bin that fits nowhere leaves the first one too",
		kinds: []packKind{{used: pod, accepts: []bool{true, true}, members: []int{0}}},
		bins:  []packPattern{{typ: 0, kind: 0, counts: []int{0, 0}}, {typ: 0, kind: -1, counts: []int{1, 0}}, {typ: 1, kind: -1, counts: []int{0, 1}}},
		want:  []packPattern{{typ: 0, kind: 0, counts: []int{0, 0}}, {typ: 0, kind: -1, counts: []int{1, 0}}, {typ: 1, kind: -1, counts: []int{0, 1}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			shapes := []packShape{{requests: pod, count: 3}, {requests: resources{3000, 3000, 1000}, count: 1}}
			p := &batchPacker{types: []packType{small, large}, base: resources{0, 0, 0}, shapes: shapes, kinds: tc.kinds, worth: []float64{1, 2}}
			r := &rounding{p: p, bins: tc.bins}
			r.absorb(tc.limit)
			if !slices.EqualFunc(r.bins, tc.want, func(a, b packPattern) bool {
				return a.typ == b.typ && a.kind == b.kind && slices.Equal(a.counts, b.counts)
			}) {
				t.Errorf("bins %v, want %v", r.bins, tc.want)
			}
		})
	}
}
