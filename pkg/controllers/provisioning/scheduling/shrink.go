package scheduling

import (
	"slices"
)

// shrinkRounds bounds the passes of shrink over the new nodes; each after the first finds
// little.
const shrinkRounds = 2

// shrink improves the plan after packing: it moves pods off a node opened in the pass into the
// room other such nodes have left, where that lets the node launch as a cheaper instance type
// and costs the others nothing. Pods placed one at a time leave each node some room in its
// instance type, which later pods could not fill; moving a few gathers that room where it buys
// a smaller node.
//
// A move must not change what any pod's constraints were checked against, since each was
// checked against the cluster as it was at its binding (Results.Bindings). So a pod moves only
// if neither it nor any pod bound after it has a hostname-level term (a spread or pod
// (anti-)affinity on the hostname, or anti-affinity that others respect), and then only to a
// node with the same topology domains as its own (the same zone, say), which leaves every
// domain's counts as they were; if moreover neither it nor any pod bound after it has a
// topology term at all, it may go to any node. It moves only onto a node opened before its
// binding, that accepts it (the anti-affinity of pods there, its node requirements).
func (s *scheduler) shrink() {
	hostFreeFrom := s.hostFreeFrom()
	freeFrom := len(s.bound)
	for freeFrom > hostFreeFrom && free(s.bound[freeFrom-1]) {
		freeFrom--
	}
	if hostFreeFrom == len(s.bound) {
		return
	}
	for range shrinkRounds {
		nodes := slices.Clone(s.nodes[s.existing:])
		// The roomiest are nearest to fitting a cheaper instance type.
		slices.SortStableFunc(nodes, func(a, b *node) int { return int(cpuRoom(b) - cpuRoom(a)) })
		shrunk := false
		for _, n := range nodes {
			shrunk = s.shrinkNode(n, hostFreeFrom, freeFrom) || shrunk
		}
		if !shrunk {
			return
		}
	}
}

// hostFreeFrom is the first binding from which every pod bound is hostFree: pods bound from
// there on may move among nodes of the same topology domains.
func (s *scheduler) hostFreeFrom() int {
	from := len(s.bound)
	for from > 0 && hostFree(s.bound[from-1]) {
		from--
	}
	return from
}

// hostFree reports whether a placed pod has no hostname-level term of its own and no
// anti-affinity that others respect, and can be counted out of its node again.
func hostFree(p *podInfo) bool {
	if len(p.attempts) != 1 || p.existingVolumes != nil || len(p.owned) > 0 || len(p.hostSpreads)+len(p.hostAffinities)+len(p.hostAntiAffinities) > 0 {
		return false
	}
	// Whether a spread that honours node affinity counts the pod turns on its node's
	// requirements, which narrow as pods arrive: counting it out again might not undo it.
	for _, g := range p.matches {
		if g.eligibility != nil {
			return false
		}
	}
	return true
}

// free reports whether a placed pod is hostFree and has no topology term of its own at all.
func free(p *podInfo) bool {
	return hostFree(p) && len(p.domainSpreads)+len(p.domainAffinities)+len(p.domainAntiAffinities) == 0
}

// shrinkNode moves pods bound at or after hostFreeFrom off new node n into other new nodes'
// room (to the same domains, or anywhere for those bound at or after freeFrom) until n fits a cheaper instance type, largest first; it undoes the moves if it
// cannot get there.
func (s *scheduler) shrinkNode(n *node, hostFreeFrom, freeFrom int) bool {
	if n.first == 0 {
		return false
	}
	target := n.candidates[n.first-1]
	excess := slices.Clone(n.used)
	excess.sub(target.alloc)
	var pods []*podInfo
	for _, p := range n.placed {
		if p.binding >= hostFreeFrom {
			pods = append(pods, p)
		}
	}
	slices.SortStableFunc(pods, func(a, b *podInfo) int { return int(b.requests[0] - a.requests[0]) })
	type move struct {
		p  *podInfo
		to *node
	}
	var moves []move
	for _, p := range pods {
		if !anyPositive(excess) {
			break
		}
		if !relieves(excess, p.requests) {
			continue
		}
		to := s.roomFor(n, p, p.binding < freeFrom)
		if to == nil {
			continue
		}
		s.move(p, n, to)
		moves = append(moves, move{p: p, to: to})
		excess.sub(p.requests)
	}
	if anyPositive(excess) && !s.swapOff(n, target, hostFreeFrom, freeFrom) {
		for i := len(moves) - 1; i >= 0; i-- {
			s.move(moves[i].p, moves[i].to, n)
		}
		return false
	}
	return true
}

// swapOff trades a pod on new node n for a smaller one on another new node, so that n fits the
// cheaper instance type target and the other keeps its own; the moves obey shrink's rules.
// Where moves alone find no room, a swap still can: a node bound by memory trades a pod heavy
// in memory for one as light in cpu from a node bound by cpu, which has memory to spare. Of
// the other nodes, the first fitCandidates with enough cpu room, tightest first, are weighed.
func (s *scheduler) swapOff(n *node, target *instanceType, hostFreeFrom, freeFrom int) bool {
	for _, x := range n.placed {
		if x.binding < hostFreeFrom {
			continue
		}
		// room is what target leaves with x gone: what a pod taking x's place may request.
		room := slices.Clone(target.alloc)
		room.sub(n.used)
		room.add(x.requests)
		if slices.ContainsFunc(room, func(v int64) bool { return v < 0 }) {
			continue
		}
		var y *podInfo
		var m *node
		visited := 0
		s.room.withRoom(max(0, x.requests[0]-room[0]), max(0, x.requests[1]-room[1]), 0, func(o *node) bool {
			if o == n || o.opened > x.binding || (x.binding < freeFrom && !sameDomainsFor(x, n, o)) {
				return true
			}
			for _, c := range o.placed {
				if c.binding >= hostFreeFrom && n.opened <= c.binding && within(room, c.requests) &&
					fitsSwapped(o.candidates[o.first].alloc, o.used, c.requests, x.requests) &&
					(c.binding >= freeFrom || sameDomainsFor(c, o, n)) {
					y, m = c, o
					return false
				}
			}
			visited++
			return visited < fitCandidates
		})
		if y != nil && s.swap(x, n, y, m) {
			return true
		}
	}
	return false
}

// swap puts pod x, on node n, in pod y's place on node m and y in x's, if both accept the
// other and that makes n cheaper at no cost to m; it reports whether it did.
func (s *scheduler) swap(x *podInfo, n *node, y *podInfo, m *node) bool {
	nPrice, mPrice := n.prices[n.first], m.prices[m.first]
	ax, ay := &x.attempts[0], &y.attempts[0]
	allowedX, keyX := s.allowedDomains(x, ax)
	allowedY, keyY := s.allowedDomains(y, ay)
	if keyX != nil || keyY != nil || !s.compatibleNew(m, x, ax, allowedX) || !s.compatibleNew(n, y, ay, allowedY) {
		return false
	}
	s.take(y, m)
	toM, refusal := s.constrain(m, x, ax, allowedX)
	if refusal != "" || toM.prices[toM.first] > mPrice {
		s.put(y, m)
		return false
	}
	s.take(x, n)
	toN, refusal := s.constrain(n, y, ay, allowedY)
	if refusal != "" || toN.prices[toN.first] >= nPrice {
		s.put(x, n)
		s.put(y, m)
		return false
	}
	s.rebind(m, x, toM)
	s.rebind(n, y, toN)
	return true
}

// sameDomainsFor reports whether nodes a and b have decided the same value for every topology
// key that the pod's terms or the groups counting it use.
func sameDomainsFor(p *podInfo, a, b *node) bool {
	for _, k := range p.keys {
		if v := a.domain[k.index]; v < 0 || b.domain[k.index] != v {
			return false
		}
	}
	return true
}

func anyPositive(r resources) bool {
	return slices.ContainsFunc(r, func(v int64) bool { return v > 0 })
}

// relieves reports whether taking requests off a node reduces a resource it has in excess.
func relieves(excess, requests resources) bool {
	for i, e := range excess {
		if e > 0 && requests[i] > 0 {
			return true
		}
	}
	return false
}

// roomFor is the new node other than from, opened before the pod's binding, whose cheapest
// instance type has room for the pod as it is and that accepts it, in the same domains as from
// if sameDomains, tightest of the first few; nil for none, or if the tightest would cost more.
func (s *scheduler) roomFor(from *node, p *podInfo, sameDomains bool) *node {
	a := &p.attempts[0]
	allowed, key := s.allowedDomains(p, a)
	if key != nil {
		return nil
	}
	var best *node
	bestScore := 0.0
	found := 0
	s.room.withRoomFor(p.requests, func(n *node) bool {
		if n == from || n.opened > p.binding || !fitsWith(n.candidates[n.first].alloc, n.used, p.requests) ||
			(sameDomains && !sameDomainsFor(p, from, n)) || !s.compatibleNew(n, p, a, allowed) {
			return true
		}
		if score := fitScore(n, p.requests); best == nil || score > bestScore {
			best, bestScore = n, score
		}
		found++
		return found < fitCandidates
	})
	if best == nil {
		return nil
	}
	// The move must cost the node nothing: no narrowing it refuses, no dearer instance type.
	if nw, refusal := s.constrain(best, p, a, allowed); refusal != "" || nw.candidates[nw.first] != best.candidates[best.first] {
		return nil
	}
	return best
}

// move takes placed pod p off node from and puts it on node to, which has room for it in its
// cheapest instance type; from then launches as the cheapest type that still fits it.
func (s *scheduler) move(p *podInfo, from, to *node) {
	s.take(p, from)
	s.put(p, to)
}

// take takes placed pod p off node from, which then launches as the cheapest type that still
// fits it; p keeps its binding until put or rebind places it again.
func (s *scheduler) take(p *podInfo, from *node) {
	s.room.remove(from)
	i := slices.Index(from.placed, p)
	from.placed = slices.Delete(from.placed, i, i+1)
	i = slices.Index(from.pods, p.pod)
	from.pods = slices.Delete(from.pods, i, i+1)
	from.used.sub(p.requests)
	from.ports = releasePorts(from.ports, p.hostPorts)
	s.uncount(from, p.matches)
	// The cheapest type that still holds the rest, unless it takes the pool over its limits
	// (the one the node has does not).
	for j := 0; j <= from.first; j++ {
		if from.canLaunchAs(from.candidates[j]) {
			from.first = j
			break
		}
	}
	from.commitFirst()
	s.room.insert(from)
}

// put places pod p, taken off its node, on node to.
func (s *scheduler) put(p *podInfo, to *node) {
	a := &p.attempts[0]
	allowed, _ := s.allowedDomains(p, a)
	nw, _ := s.constrain(to, p, a, allowed)
	s.rebind(to, p, nw)
}

// rebind places pod p, taken off its node, on node to as narrowing nw has it, at its place in
// the binding order.
func (s *scheduler) rebind(to *node, p *podInfo, nw *narrowing) {
	binding := p.binding
	s.place(to, p, nw)
	// place appended the binding anew.
	s.results.Bindings = s.results.Bindings[:len(s.results.Bindings)-1]
	s.bound = s.bound[:len(s.bound)-1]
	s.results.Bindings[binding].NodeName = to.name()
	p.binding = binding
}

// uncount takes a pod that matches groups off node n's topology counts.
func (s *scheduler) uncount(n *node, matches []*topologyGroup) {
	for _, g := range matches {
		g.total--
		if g.key == nil {
			n.counts[g.id]--
			if n.counts[g.id] == 0 && n.existing == nil {
				g.newNodesCounted--
			}
			continue
		}
		if v := n.domain[g.key.index]; v >= 0 && s.eligible(n, g) {
			g.domainCounts[v]--
		}
	}
}
