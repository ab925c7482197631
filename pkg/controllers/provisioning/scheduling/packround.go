package scheduling

import (
	"cmp"
	"math"
	"slices"
)

// round turns the program's optimum into whole bins: each kind's bins take its patterns, the
// most bought first; new bins each pattern bought whole, as often as bought; what is left of
// the pods goes first into the room the bins have left, then onto new bins chosen greedily.
func (p *batchPacker) round(prices []float64) []packPattern {
	r := &rounding{p: p, remaining: make([]int, len(p.shapes))}
	for s, shape := range p.shapes {
		r.remaining[s] = shape.count
	}
	r.wholePatterns()
	r.fillRoom()
	r.packRest(prices)
	return r.bins
}

// rounding is the state of round: the bins so far and the pods of each shape not in one.
type rounding struct {
	p         *batchPacker
	bins      []packPattern
	remaining []int
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

// wholePatterns makes bins of the patterns the program bought: every fixed bin one of its
// kind's, whole patterns first, then the largest fractions, then the kind's seed; new bins as
// many of each pattern as bought whole. The optimum is the perturbed program's: the
// unperturbed one may be degenerate, where gonum's simplex can take very long. Patterns added
// after it are not bought.
func (r *rounding) wholePatterns() {
	p := r.p
	x := make([]float64, len(p.patterns))
	copy(x, p.bought)
	order := make([]int, len(p.patterns))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(x[b], x[a]) })
	for k, kind := range p.kinds {
		need := len(kind.members)
		for _, whole := range []bool{true, false} {
			for _, j := range order {
				if p.patterns[j].kind != k || need == 0 || x[j] < 1e-9 {
					continue
				}
				n := 1
				if whole {
					n = int(math.Floor(x[j] + 1e-9))
				}
				for range min(n, need) {
					r.add(p.patterns[j])
					need--
				}
			}
		}
		for ; need > 0; need-- {
			r.add(p.patterns[slices.IndexFunc(p.patterns, func(pt packPattern) bool { return pt.kind == k })])
		}
	}
	for _, j := range order {
		if p.patterns[j].kind >= 0 {
			continue
		}
		for range int(math.Floor(x[j] + 1e-9)) {
			if !slices.ContainsFunc(p.patterns[j].counts, func(n int) bool { return n > 0 }) {
				break
			}
			r.add(p.patterns[j])
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
		used := slices.Clone(p.base)
		if bin.kind >= 0 {
			used = slices.Clone(p.kinds[bin.kind].used)
		}
		for s, n := range bin.counts {
			for d, v := range p.shapes[s].requests {
				used[d] += int64(n) * v
			}
		}
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
