package scheduling

import (
	"cmp"
	"errors"
	"math"
	"slices"
)

// The batch packer chooses instance types against a whole group of pods at once, where the
// scheduler, placing one pod at a time, sizes each node for the pods it has seen. It solves the
// group's cutting-stock program (Gilmore–Gomory): a pattern is a node of one type holding some
// pods of each shape, and the program buys patterns, in fractions, to hold every pod at least
// cost. Column generation finds the patterns worth having: the program over the patterns so
// far prices each pod shape (its dual), and a packing of some type worth more at those prices
// than the type costs joins them. The optimum is then rounded to whole nodes (down, and on
// small groups also by diving), and what rounding leaves is packed greedily. Nodes that launch whatever the packing (fixed: they hold
// pods that cannot move) are rows of the program too: each gets exactly one pattern of its
// own, which chooses its type and what it takes besides. It is pure: vectors in, bins out.

const (
	// packTypesKept bounds the instance types the packer weighs (keptTypes).
	packTypesKept = 24
	// packRounds bounds the column generation's rounds, and packColumnsPerRound the patterns a
	// round adds; the program converges in a dozen or two on the workloads measured.
	packRounds          = 30
	packColumnsPerRound = 32
	// packMinGain is the least share of a group's price a packing must promise to save: the
	// column generation stops, and the group keeps its nodes, once its prices show that no
	// packing saves that much.
	packMinGain = 0.01
	// packMaxRows bounds the program's rows (pod shapes and kinds of fixed bins): the simplex
	// keeps the basis's inverse dense, and a group of pods of many distinct requests keeps its
	// nodes.
	packMaxRows = 128
	// packDiveSteps bounds the solves of a rounding by diving, and packDiveBins the bins the
	// program's optimum buys for a group to be rounded that way too (round).
	packDiveSteps = 16
	packDiveBins  = 32
)

// packShape is one kind of movable pod: its requests and how many pods have them.
type packShape struct {
	requests resources
	count    int
}

// packType is an instance type a bin may launch as.
type packType struct {
	alloc resources
	price float64
}

// packFixed is a bin that launches whatever the packing: what its unmovable pods and its
// daemonsets use, and which shapes it accepts.
type packFixed struct {
	used    resources
	accepts func(shape int) bool
}

// packedBin is a bin of the packing: the type it launches as (an index into the types given),
// the fixed bin it is (or -1 for a new one), and how many pods of each shape it holds.
type packedBin struct {
	typ    int
	fixed  int
	counts []int
}

// packKind is fixed bins alike: the same use and the same shapes accepted.
type packKind struct {
	used    resources
	accepts []bool
	members []int
}

// packPattern is a column of the program: a bin of a type, of a kind (or -1 for a new bin),
// holding counts pods of each shape.
type packPattern struct {
	typ    int
	kind   int
	counts []int
}

type batchPacker struct {
	types  []packType
	index  []int // the kept types' indexes in the types given
	base   resources
	shapes []packShape
	kinds  []packKind
	// worth is, per shape, what its requests cost bought in fractions of the type that holds
	// them cheapest: the greedy's value of a pod where the program has none.
	worth    []float64
	patterns []packPattern
	// bought is the program's last optimum, a number of each pattern, over the patterns then;
	// basis its basic columns.
	bought []float64
	basis  []int
	// alone and kindSeed are the seed's patterns of each shape alone and of each kind (indexes
	// into patterns), from which startingBasis builds the first solve's basis.
	alone, kindSeed []int
}

// batchPack packs the shapes: every fixed bin gets a type and the pods it takes, new bins hold
// the rest, each starting with base used. current is the packing as it stands: its types are
// weighed and its bins seed the program, whose optimum then costs no more than it. It reports
// false if some pod or fixed bin fits no type weighed, if the packing costs no less than the
// current one, or if stop reports true while the program is solved (a rounding by diving it
// cuts short leaves the rounding down). The packing has no more new bins than current has unless
// absorb could not place the pods of the bins beyond them; repack refuses such a packing.
func batchPack(types []packType, base resources, fixed []packFixed, shapes []packShape, current []packedBin, stop func() bool) ([]packedBin, bool) {
	p := &batchPacker{base: base, shapes: shapes}
	var used []int
	for _, b := range current {
		used = append(used, b.typ)
	}
	p.types, p.index = keptTypes(types, base, shapes, used)
	p.worth = make([]float64, len(shapes))
	for s := range shapes {
		if p.worth[s] = p.worthOf(shapes[s].requests); math.IsInf(p.worth[s], 1) {
			return nil, false
		}
	}
	if !p.groupKinds(fixed) || len(p.shapes)+len(p.kinds) > packMaxRows {
		return nil, false
	}
	p.seed(current)
	before := 0.0
	for _, b := range current {
		before += types[b.typ].price
	}
	prices, promising := p.generate(before*(1-packMinGain), stop)
	if !promising {
		return nil, false
	}
	bins := p.round(prices, stop, len(current)-len(fixed))
	out := make([]packedBin, 0, len(bins))
	price := 0.0
	for _, b := range bins {
		if b.kind >= 0 {
			// A kind's bins are its members, in order.
			members := p.kinds[b.kind].members
			out = append(out, packedBin{typ: p.index[b.typ], fixed: members[0], counts: b.counts})
			p.kinds[b.kind].members = members[1:]
		} else {
			out = append(out, packedBin{typ: p.index[b.typ], fixed: -1, counts: b.counts})
		}
		price += p.types[b.typ].price
	}
	if price >= before*(1-1e-9) {
		return nil, false
	}
	return out, true
}

// keptTypes are the types the packer weighs, with their indexes in types: those in use, and of
// those no other beats in every resource at no higher price, if more than packTypesKept, the
// ones that hold the group's average pod cheapest.
func keptTypes(types []packType, base resources, shapes []packShape, inUse []int) ([]packType, []int) {
	var kept []int
	for i, t := range types {
		beaten := slices.ContainsFunc(types, func(u packType) bool {
			return u.price <= t.price && within(u.alloc, t.alloc) && (u.price < t.price || !within(t.alloc, u.alloc))
		})
		// Of types alike in every resource and price, the first.
		if !beaten && !slices.ContainsFunc(types[:i], func(u packType) bool {
			return u.price == t.price && within(u.alloc, t.alloc) && within(t.alloc, u.alloc)
		}) {
			kept = append(kept, i)
		}
	}
	if len(kept) > packTypesKept {
		average := make([]float64, len(base))
		total := 0.0
		for _, s := range shapes {
			for d, v := range s.requests {
				average[d] += float64(v) * float64(s.count)
			}
			total += float64(s.count)
		}
		perPrice := func(t packType) float64 {
			held := math.Inf(1)
			for d, v := range average {
				if v > 0 {
					held = math.Min(held, float64(t.alloc[d]-base[d])*total/v)
				}
			}
			return held / t.price
		}
		slices.SortStableFunc(kept, func(a, b int) int { return cmp.Compare(perPrice(types[b]), perPrice(types[a])) })
		kept = kept[:packTypesKept]
	}
	for _, t := range inUse {
		if !slices.Contains(kept, t) {
			kept = append(kept, t)
		}
	}
	slices.Sort(kept)
	out := make([]packType, len(kept))
	for i, t := range kept {
		out[i] = types[t]
	}
	return out, kept
}

// worthOf is what requests cost bought in fractions of the kept type that holds them
// cheapest, or +Inf if none holds them.
func (p *batchPacker) worthOf(requests resources) float64 {
	best := math.Inf(1)
	for _, t := range p.types {
		share, fits := 0.0, true
		for d, v := range requests {
			room := t.alloc[d] - p.base[d]
			if v > room {
				fits = false
				break
			}
			if v > 0 {
				share = math.Max(share, float64(v)/float64(room))
			}
		}
		if fits {
			best = math.Min(best, t.price*share)
		}
	}
	return best
}

// groupKinds groups the fixed bins into kinds; false if one fits no kept type.
func (p *batchPacker) groupKinds(fixed []packFixed) bool {
	for f, b := range fixed {
		if !slices.ContainsFunc(p.types, func(t packType) bool { return within(t.alloc, b.used) }) {
			return false
		}
		accepts := make([]bool, len(p.shapes))
		for s := range accepts {
			accepts[s] = b.accepts == nil || b.accepts(s)
		}
		k := slices.IndexFunc(p.kinds, func(k packKind) bool { return slices.Equal(k.used, b.used) && slices.Equal(k.accepts, accepts) })
		if k < 0 {
			p.kinds = append(p.kinds, packKind{used: b.used, accepts: accepts})
			k = len(p.kinds) - 1
		}
		p.kinds[k].members = append(p.kinds[k].members, f)
	}
	return true
}

// seed starts the program with the current packing's bins and patterns that hold every pod: each
// shape alone on the type that holds it cheapest per pod, and each kind on the cheapest type
// that holds it, filled greedily.
func (p *batchPacker) seed(current []packedBin) {
	kindOf := map[int]int{}
	for k, kind := range p.kinds {
		for _, f := range kind.members {
			kindOf[f] = k
		}
	}
	for _, b := range current {
		pt := packPattern{typ: slices.Index(p.index, b.typ), kind: -1, counts: b.counts}
		if b.fixed >= 0 {
			pt.kind = kindOf[b.fixed]
		}
		p.patterns = append(p.patterns, pt)
	}
	for s := range p.shapes {
		best, perPod := -1, math.Inf(1)
		var bestCounts []int
		for t := range p.types {
			counts := make([]int, len(p.shapes))
			counts[s] = p.copies(t, p.base, s, p.shapes[s].count)
			if counts[s] > 0 && p.types[t].price/float64(counts[s]) < perPod {
				best, perPod, bestCounts = t, p.types[t].price/float64(counts[s]), counts
			}
		}
		p.alone = append(p.alone, len(p.patterns))
		p.patterns = append(p.patterns, packPattern{typ: best, kind: -1, counts: bestCounts})
	}
	for k, kind := range p.kinds {
		for t := range p.types {
			if within(p.types[t].alloc, kind.used) {
				counts, _ := p.fill(t, kind.used, kind.accepts, p.worth, nil, p.fillOrders(t, p.worth))
				p.kindSeed = append(p.kindSeed, len(p.patterns))
				p.patterns = append(p.patterns, packPattern{typ: t, kind: k, counts: counts})
				break
			}
		}
	}
}

// copies is how many pods of shape s, up to limit, a bin of type t using used has room for.
func (p *batchPacker) copies(t int, used resources, s, limit int) int {
	n := limit
	for d, v := range p.shapes[s].requests {
		if v > 0 {
			n = min(n, int((p.types[t].alloc[d]-used[d])/v))
		}
	}
	return max(n, 0)
}

// generate runs the column generation and returns the last prices of the shapes and kinds (nil
// if the program could not be priced even once), and whether a packing may cost less than
// target: false once the prices show none does, or once stop reports true (looked at before
// each solve and each type priced).
func (p *batchPacker) generate(target float64, stop func() bool) ([]float64, bool) {
	var prices []float64
	for range packRounds {
		if stop() {
			return nil, false
		}
		next, err := p.prices(stop)
		if errors.Is(err, errStopped) {
			return nil, false
		}
		if err != nil {
			break
		}
		prices = next
		type column struct {
			packPattern
			ratio float64
		}
		var columns []column
		// ratio is the most any filling found is worth per its price: the prices scaled down by
		// it price every packing within its price, so no packing costs less than their worth
		// so scaled (Farley's bound, were the fillings the best ones).
		ratio := 1.0
		for t := range p.types {
			// Pricing a round weighs every type against every kind of fixed bin: as long as a
			// solve, so the budget is looked at here too.
			if stop() {
				return nil, false
			}
			orders := p.fillOrders(t, prices)
			counts, value := p.fill(t, p.base, nil, prices, nil, orders)
			ratio = math.Max(ratio, value/p.types[t].price)
			if value > p.types[t].price*(1+1e-7) {
				columns = append(columns, column{packPattern{typ: t, kind: -1, counts: counts}, value / p.types[t].price})
			}
			for k, kind := range p.kinds {
				if !within(p.types[t].alloc, kind.used) {
					continue
				}
				counts, value := p.fill(t, kind.used, kind.accepts, prices, nil, orders)
				value += prices[len(p.shapes)+k]
				ratio = math.Max(ratio, value/p.types[t].price)
				if value > p.types[t].price*(1+1e-7) {
					columns = append(columns, column{packPattern{typ: t, kind: k, counts: counts}, value / p.types[t].price})
				}
			}
		}
		if p.worthAt(prices)/ratio >= target {
			return prices, false
		}
		if len(columns) == 0 {
			break
		}
		slices.SortStableFunc(columns, func(a, b column) int { return cmp.Compare(b.ratio, a.ratio) })
		for _, c := range columns[:min(len(columns), packColumnsPerRound)] {
			p.patterns = append(p.patterns, c.packPattern)
		}
	}
	return prices, true
}

// worthAt is what every pod and fixed bin is worth at the prices.
func (p *batchPacker) worthAt(prices []float64) float64 {
	worth := 0.0
	for s, shape := range p.shapes {
		worth += prices[s] * float64(shape.count)
	}
	for k, kind := range p.kinds {
		worth += prices[len(p.shapes)+k] * float64(len(kind.members))
	}
	return worth
}

// fillOrders are the orders in which fillings of type t try the shapes, at the prices: by
// price per the type's room in the pod's largest share of it, in the sum of its shares, in
// cpu, in memory, and by price alone. Each order packs some mixes better than the others.
// Shapes priced at nothing are left out.
func (p *batchPacker) fillOrders(t int, prices []float64) [][]int {
	room := slices.Clone(p.types[t].alloc)
	room.sub(p.base)
	largest, sum := make([]float64, len(p.shapes)), make([]float64, len(p.shapes))
	var candidates []int
	for s, shape := range p.shapes {
		if prices[s] <= 0 {
			continue
		}
		candidates = append(candidates, s)
		for d, v := range shape.requests {
			if v > 0 && room[d] > 0 {
				f := float64(v) / float64(room[d])
				largest[s], sum[s] = math.Max(largest[s], f), sum[s]+f
			}
		}
	}
	keys := [][]float64{make([]float64, len(p.shapes)), make([]float64, len(p.shapes)), make([]float64, len(p.shapes)), make([]float64, len(p.shapes)), prices}
	for _, s := range candidates {
		keys[0][s] = prices[s] / max(largest[s], 1e-12)
		keys[1][s] = prices[s] / max(sum[s], 1e-12)
		keys[2][s] = prices[s] / float64(max(1, p.shapes[s].requests[0]))
		keys[3][s] = prices[s] / float64(max(1, p.shapes[s].requests[1]))
	}
	orders := make([][]int, len(keys))
	for k, key := range keys {
		order := slices.Clone(candidates)
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key[b], key[a]) })
		orders[k] = order
	}
	return orders
}

// fill is the best of the greedy fillings, in each of orders, of a bin of type t using used
// already: how many pods of each shape (of those accepted, or all; at most remaining of each,
// or the shape's count) it takes, and their value at the prices.
func (p *batchPacker) fill(t int, used resources, accepts []bool, prices []float64, remaining []int, orders [][]int) ([]int, float64) {
	var best []int
	bestValue := 0.0
	left := make(resources, len(used))
	counts := make([]int, len(p.shapes))
	for _, order := range orders {
		copy(left, p.types[t].alloc)
		left.sub(used)
		clear(counts)
		value := 0.0
		for _, s := range order {
			if accepts != nil && !accepts[s] {
				continue
			}
			n := p.shapes[s].count
			if remaining != nil {
				n = remaining[s]
			}
			for d, v := range p.shapes[s].requests {
				if v > 0 {
					n = min(n, int(left[d]/v))
				}
			}
			if n <= 0 {
				continue
			}
			counts[s] = n
			for d, v := range p.shapes[s].requests {
				left[d] -= int64(n) * v
			}
			value += float64(n) * prices[s]
		}
		if value > bestValue || best == nil {
			best, bestValue = slices.Clone(counts), value
		}
	}
	return best, bestValue
}
