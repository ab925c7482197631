package scheduling

import (
	"cmp"
	"math"
	"slices"
)

// round turns the program's optimum into whole bins, two ways, and keeps the cheaper. Rounding
// down: each kind's bins take its patterns, the most bought first; new bins each pattern bought
// whole, as often as bought; what is left of the pods goes first into the room the bins have
// left, then onto new bins chosen greedily. Diving: the patterns bought whole are taken, or the
// one bought most if none is, and the program is solved again for what is left, up to
// packDiveSteps times, the last optimum then rounded down. On a group of a few dozen pods,
// rounding down once is coarse (3.5 % above the program's optimum on one of the real
// catalogue's 100-pod groups); diving follows the program's optimum bin by bin. It is tried
// only on groups of at most packDiveBins bins (on larger ones it found nothing cheaper in the
// benchmarks, for up to packDiveSteps solves) and where rounding down costs more than
// packMinGain above the optimum. A dive is kept only within newBins new bins (the group's nodes
// that may be dropped, which a packing cannot outnumber), unless rounding down needs more too;
// either rounding's new bins beyond those are first taken apart into the others (absorb).
func (p *batchPacker) round(prices []float64, stop func() bool, newBins int) []packPattern {
	down := p.newRounding()
	down.wholePatterns(p.bought)
	down.fillRoom()
	down.packRest(prices)
	down.absorb(newBins)
	optimum, bins := 0.0, 0.0
	for j, v := range p.bought {
		optimum += v * p.types[p.patterns[j].typ].price
		bins += v
	}
	fits := func(r *rounding) bool { return r.newBins() <= newBins }
	if bins > packDiveBins || (fits(down) && down.price() <= optimum*(1+packMinGain)) {
		return down.bins
	}
	dived := p.dive(prices, stop)
	if dived == nil {
		return down.bins
	}
	dived.absorb(newBins)
	// A rounding within the new bins allowed beats one beyond them, which repack refuses.
	if fits(dived) && !fits(down) || fits(dived) == fits(down) && dived.price() < down.price() {
		return dived.bins
	}
	return down.bins
}

// absorb takes apart the new bins beyond limit (the group's nodes that may be dropped, which a
// packing cannot outnumber: repack has no node to open), the cheapest first, each pod to the bin
// whose type it makes dearer the least (or for which a type as cheap or cheaper holds it),
// growing that bin's type; the pods of the most worth first, which are the hardest to place.
// Where every node of a group holds a pod that cannot move (one pod a node of a hostname
// anti-affinity, say), the program's optimum may round to a bin or two more than the group
// has, and the packing was thrown away. If some pod of a bin taken apart fits no other bin, the
// rounding is left as it was.
func (r *rounding) absorb(limit int) {
	p := r.p
	before := r.bins
	byWorth := make([]int, len(p.shapes))
	for s := range byWorth {
		byWorth[s] = s
	}
	slices.SortStableFunc(byWorth, func(a, b int) int { return cmp.Compare(p.worth[b], p.worth[a]) })
	for r.newBins() > limit {
		bins := slices.Clone(r.bins)
		for i := range bins {
			bins[i].counts = slices.Clone(bins[i].counts)
		}
		used := make([]resources, len(bins))
		for i, b := range bins {
			used[i] = p.binUse(b)
		}
		apart := -1
		for i, b := range bins {
			if b.kind < 0 && (apart < 0 || p.types[b.typ].price < p.types[bins[apart].typ].price) {
				apart = i
			}
		}
		if apart < 0 {
			r.bins = before
			return
		}
		taken := bins[apart]
		bins = slices.Delete(bins, apart, apart+1)
		used = slices.Delete(used, apart, apart+1)
		for _, s := range byWorth {
			for range taken.counts[s] {
				to, typ, cost := -1, -1, math.Inf(1)
				for i, b := range bins {
					if b.kind >= 0 && !p.kinds[b.kind].accepts[s] {
						continue
					}
					if t := p.cheapestHolding(used[i].plus(p.shapes[s].requests)); t >= 0 {
						if c := p.types[t].price - p.types[b.typ].price; c < cost {
							to, typ, cost = i, t, c
						}
					}
				}
				if to < 0 {
					r.bins = before
					return
				}
				bins[to].typ = typ
				bins[to].counts[s]++
				used[to].add(p.shapes[s].requests)
			}
		}
		r.bins = bins
	}
}

// binUse is what a bin of the pattern uses: its kind's fixed use (or the base, for a new bin)
// and its pods.
func (p *batchPacker) binUse(b packPattern) resources {
	used := slices.Clone(p.base)
	if b.kind >= 0 {
		used = slices.Clone(p.kinds[b.kind].used)
	}
	for s, n := range b.counts {
		for d, v := range p.shapes[s].requests {
			used[d] += int64(n) * v
		}
	}
	return used
}

// cheapestHolding is the cheapest kept type whose allocatable holds used, or -1.
func (p *batchPacker) cheapestHolding(used resources) int {
	best := -1
	for t, typ := range p.types {
		if within(typ.alloc, used) && (best < 0 || typ.price < p.types[best].price) {
			best = t
		}
	}
	return best
}

// dive rounds by diving (round); nil if stop reports true or a solve fails before it is done.
func (p *batchPacker) dive(prices []float64, stop func() bool) *rounding {
	r := p.newRounding()
	x := p.bought
	for step := 1; !r.done(); step++ {
		if step > packDiveSteps || !r.fixWhole(x) {
			r.wholePatterns(x)
			break
		}
		if r.done() {
			break
		}
		if stop() {
			return nil
		}
		if x = p.optimumFor(r.demand(), stop); x == nil {
			return nil
		}
	}
	r.fillRoom()
	r.packRest(prices)
	return r
}

// rounding is the state of a rounding: the bins so far, the pods of each shape not in one and
// each kind's members without one.
type rounding struct {
	p         *batchPacker
	bins      []packPattern
	remaining []int
	members   []int
}

func (p *batchPacker) newRounding() *rounding {
	r := &rounding{p: p, remaining: make([]int, len(p.shapes)), members: make([]int, len(p.kinds))}
	for s, shape := range p.shapes {
		r.remaining[s] = shape.count
	}
	for k, kind := range p.kinds {
		r.members[k] = len(kind.members)
	}
	return r
}

func (r *rounding) done() bool {
	return !slices.ContainsFunc(r.remaining, func(n int) bool { return n > 0 }) && !slices.ContainsFunc(r.members, func(n int) bool { return n > 0 })
}

// demand is what the rounding has left for the program: its pods and its kinds' members (a
// new rounding's: every pod and every member).
func (r *rounding) demand() []float64 {
	demand := make([]float64, 0, len(r.remaining)+len(r.members))
	for _, n := range r.remaining {
		demand = append(demand, float64(n))
	}
	for _, n := range r.members {
		demand = append(demand, float64(n))
	}
	return demand
}

// newBins counts the rounding's bins that are not a kind's.
func (r *rounding) newBins() int {
	n := 0
	for _, b := range r.bins {
		if b.kind < 0 {
			n++
		}
	}
	return n
}

func (r *rounding) price() float64 {
	price := 0.0
	for _, b := range r.bins {
		price += r.p.types[b.typ].price
	}
	return price
}

// fixWhole takes the patterns x buys whole, as often as it buys them, or if it buys none whole
// the one it buys most, once; false if it takes none.
func (r *rounding) fixWhole(x []float64) bool {
	took := false
	most, mostBought := -1, 1e-9
	for j, v := range x {
		pt := r.p.patterns[j]
		for range int(math.Floor(v + 1e-9)) {
			if !r.take(pt) {
				break
			}
			took = true
		}
		if v > mostBought && r.takes(pt) {
			most, mostBought = j, v
		}
	}
	if !took && most >= 0 {
		took = r.take(r.p.patterns[most])
	}
	return took
}

// takes reports whether a bin of the pattern would be one the rounding needs: one of a kind with
// members left, or a new bin holding some pod that remains.
func (r *rounding) takes(pt packPattern) bool {
	if pt.kind >= 0 {
		return r.members[pt.kind] > 0
	}
	for s, n := range pt.counts {
		if n > 0 && r.remaining[s] > 0 {
			return true
		}
	}
	return false
}

// take makes a bin of the pattern if the rounding needs one (takes).
func (r *rounding) take(pt packPattern) bool {
	if !r.takes(pt) {
		return false
	}
	if pt.kind >= 0 {
		r.members[pt.kind]--
	}
	r.add(pt)
	return true
}

// add makes a bin of the pattern, holding at most the pods that remain; none for a new bin
// that would hold no pod.
func (r *rounding) add(pt packPattern) {
	counts := slices.Clone(pt.counts)
	for s := range counts {
		counts[s] = min(counts[s], r.remaining[s])
	}
	if pt.kind < 0 && !slices.ContainsFunc(counts, func(n int) bool { return n > 0 }) {
		return
	}
	for s := range counts {
		r.remaining[s] -= counts[s]
	}
	r.bins = append(r.bins, packPattern{typ: pt.typ, kind: pt.kind, counts: counts})
}

// wholePatterns makes bins of the patterns x buys: every kind's member without a bin one of its
// kind's, whole patterns first, then the largest fractions, then the kind's seed; new bins as
// many of each pattern as bought whole. The optimum is the perturbed program's: the
// unperturbed one may be degenerate. Patterns added after it are not bought.
func (r *rounding) wholePatterns(x []float64) {
	p := r.p
	bought := make([]float64, len(p.patterns))
	copy(bought, x)
	order := make([]int, len(p.patterns))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(bought[b], bought[a]) })
	for k := range p.kinds {
		for _, whole := range []bool{true, false} {
			for _, j := range order {
				if p.patterns[j].kind != k || r.members[k] == 0 || bought[j] < 1e-9 {
					continue
				}
				n := 1
				if whole {
					n = int(math.Floor(bought[j] + 1e-9))
				}
				for range min(n, r.members[k]) {
					r.take(p.patterns[j])
				}
			}
		}
		for r.members[k] > 0 {
			r.take(p.patterns[slices.IndexFunc(p.patterns, func(pt packPattern) bool { return pt.kind == k })])
		}
	}
	for _, j := range order {
		if p.patterns[j].kind >= 0 {
			continue
		}
		for range int(math.Floor(bought[j] + 1e-9)) {
			if !r.take(p.patterns[j]) {
				break
			}
		}
	}
}

// fillRoom puts the pods that remain into the room the bins have left, the most worth first,
// each into the first bin with room.
func (r *rounding) fillRoom() {
	p := r.p
	shapes := make([]int, len(p.shapes))
	for s := range shapes {
		shapes[s] = s
	}
	slices.SortStableFunc(shapes, func(a, b int) int { return cmp.Compare(p.worth[b], p.worth[a]) })
	for i := range r.bins {
		bin := &r.bins[i]
		used := p.binUse(*bin)
		for _, s := range shapes {
			if r.remaining[s] == 0 || (bin.kind >= 0 && !p.kinds[bin.kind].accepts[s]) {
				continue
			}
			if n := p.copies(bin.typ, used, s, r.remaining[s]); n > 0 {
				bin.counts[s] += n
				r.remaining[s] -= n
				for d, v := range p.shapes[s].requests {
					used[d] += int64(n) * v
				}
			}
		}
	}
}

// packRest puts the pods that still remain on new bins: each the type whose filling is worth
// most per price, at the program's prices (nil: the pods' fractional worth), and a little of
// each pod's fractional worth, so that none is worth nothing.
func (r *rounding) packRest(prices []float64) {
	p := r.p
	value := make([]float64, len(p.shapes))
	for s := range value {
		value[s] = 1e-6 * p.worth[s]
		if prices != nil {
			value[s] += prices[s]
		} else {
			value[s] += p.worth[s]
		}
	}
	orders := make([][][]int, len(p.types))
	for t := range p.types {
		orders[t] = p.fillOrders(t, value)
	}
	for slices.ContainsFunc(r.remaining, func(n int) bool { return n > 0 }) {
		best, bestRatio := -1, -1.0
		var bestCounts []int
		for t := range p.types {
			counts, worth := p.fill(t, p.base, nil, value, r.remaining, orders[t])
			if ratio := worth / p.types[t].price; worth > 0 && ratio > bestRatio {
				best, bestRatio, bestCounts = t, ratio, counts
			}
		}
		if best < 0 {
			return // no kept type holds what is left; batchPack's worth check rules this out
		}
		r.add(packPattern{typ: best, kind: -1, counts: bestCounts})
	}
}
