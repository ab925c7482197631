package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// repack packs again, with the batch packer (batchPack), the pods that may move among the new
// nodes of a group of interchangeable nodes, where the packing costs less than the plan's.
// Which pods may move follows shrink's rule: those bound after the last pod with a
// hostname-level term, each within its group, whose nodes have the same topology domains, so
// that no pod's constraints change from what they were checked against. A group is nodes of
// one provisioner with the same requirements, instance types, zones, capacity types and
// domains; a node holding a pod that cannot move is fixed: it launches whatever the packing,
// and the packer chooses its type and fills it. It stops once the packer's budget has passed.
func (s *scheduler) repack(packer *Packer) {
	packed := &s.results.Packed
	packed.Ran = true
	start := packer.Clock.Now()
	defer func() { packed.Took = packer.Clock.Since(start) }()
	stop := func() bool {
		packed.Stopped = packed.Stopped || packer.Clock.Since(start) >= packer.Budget
		return packed.Stopped
	}
	from := s.hostFreeFrom()
	if from == len(s.bound) {
		return
	}
	for _, group := range s.interchangeable() {
		if stop() {
			return
		}
		packed.Groups++
		if s.repackGroup(group, from, stop) {
			packed.Repacked++
		}
	}
}

// groupKey buckets new nodes that may be interchangeable; interchangeable splits a bucket by
// requirements.
type groupKey struct {
	prov          *provisioner
	zones         uint64
	capacityTypes uint64
	domain        string
	// ports are the host ports the node's pods and daemonsets bind, which keep it off the
	// instance types whose own daemonsets bind them: nodes that may launch as different types
	// are not interchangeable.
	ports string
}

// interchangeable groups the new nodes whose pods could go on any of them: of one provisioner,
// with the same requirements, zones, capacity types and topology domains. Pools with minValues
// or keys they choose per node are left out: their nodes' types and labels are not the
// packer's to choose.
func (s *scheduler) interchangeable() [][]*node {
	buckets := map[groupKey][][]*node{}
	var keys []groupKey
	for _, n := range s.nodes[s.existing:] {
		if len(n.prov.minValues) > 0 || len(n.prov.chosenKeys) > 0 {
			continue
		}
		k := groupKey{prov: n.prov, zones: n.zones, capacityTypes: n.capacityTypes, domain: fmt.Sprint(n.domain), ports: fmt.Sprint(n.ports)}
		groups, ok := buckets[k]
		if !ok {
			keys = append(keys, k)
		}
		i := slices.IndexFunc(groups, func(g []*node) bool {
			return g[0].requirements.Implies(n.requirements) && n.requirements.Implies(g[0].requirements)
		})
		if i < 0 {
			groups = append(groups, nil)
			i = len(groups) - 1
		}
		groups[i] = append(groups[i], n)
		buckets[k] = groups
	}
	var out [][]*node
	for _, k := range keys {
		for _, g := range buckets[k] {
			if len(g) > 1 {
				out = append(out, g)
			}
		}
	}
	return out
}

// groupTypes are the instance types any node of the group may launch as, whatever its size,
// cheapest first, with their prices in the group's zones and capacity types.
func groupTypes(n *node) *narrowing {
	out := &narrowing{requirements: n.requirements, zones: n.zones, capacityTypes: n.capacityTypes, domain: n.domain}
	for _, t := range n.prov.instanceTypes {
		if !n.prov.compatibleType(t, n.requirements) || portsConflict(t.daemonPorts, n.ports) {
			continue
		}
		if price := t.price(n.zones, n.capacityTypes); !math.IsInf(price, 1) {
			out.candidates = append(out.candidates, t)
			out.prices = append(out.prices, price)
		}
	}
	sort.Sort(byPrice{out})
	out.maxAlloc = maxAllocatable(out.candidates)
	return out
}

// widen gives node n every type of the group, n.first the cheapest that holds what it uses
// within the provisioner's limits (the type it has is one).
func (s *scheduler) widen(n *node, types *narrowing) {
	s.room.remove(n)
	n.candidates, n.prices, n.maxAlloc = types.candidates, types.prices, types.maxAlloc
	n.first = slices.IndexFunc(n.candidates, n.canLaunchAs)
	n.commitFirst()
	s.room.insert(n)
}

// repackGroup repacks one group's movable pods where that costs less, and leaves the group as
// it was otherwise (also when stop reports true before the packing is found). It reports
// whether the group changed.
func (s *scheduler) repackGroup(group []*node, from int, stop func() bool) bool {
	g := newGroupPacking(group, from)
	if len(g.movable) == 0 {
		return false
	}
	current, ok := g.current()
	if !ok {
		return false
	}
	bins, ok := batchPack(g.packTypes(), group[0].prov.daemonSets, g.fixed(), g.shapes, current, stop)
	if !ok || len(bins)-len(g.fixedNodes) > len(g.freeNodes) || !holdsEvery(bins, g.shapes) {
		return false
	}
	return s.apply(g, bins)
}

// groupPacking is a group of interchangeable new nodes as the packer sees it: the pods that may
// move, by shape, and the nodes, fixed (holding a pod that cannot move) or free.
type groupPacking struct {
	group                 []*node
	from                  int
	types                 *narrowing
	shapes                []packShape
	movable               []*podInfo
	shape                 map[*podInfo]int
	origin                map[*podInfo]*node
	fixedNodes, freeNodes []*node
	// sized are the group's nodes' types and requirements as they stand, in group order, which
	// restore puts back: sizing them again from their pods could take a type the pool's limits
	// kept a node off, which the nodes after it then lack the room under the limits for.
	sized []narrowing
	// before is what the group's nodes cost as they stand.
	before float64
}

func newGroupPacking(group []*node, from int) *groupPacking {
	g := &groupPacking{group: group, from: from, shape: map[*podInfo]int{}, origin: map[*podInfo]*node{}}
	shapeOf := map[string]int{}
	for _, n := range group {
		g.sized = append(g.sized, n.narrowing())
		g.before += n.prices[n.first]
		fixed := false
		for _, p := range n.placed {
			if !canMove(p, from) {
				fixed = true
				continue
			}
			key := fmt.Sprint(p.requests, p.matchesHostAnti)
			i, ok := shapeOf[key]
			if !ok {
				i = len(g.shapes)
				shapeOf[key] = i
				g.shapes = append(g.shapes, packShape{requests: p.requests})
			}
			g.shapes[i].count++
			g.shape[p], g.origin[p] = i, n
			g.movable = append(g.movable, p)
		}
		if fixed {
			g.fixedNodes = append(g.fixedNodes, n)
		} else {
			g.freeNodes = append(g.freeNodes, n)
		}
	}
	g.types = groupTypes(group[0])
	return g
}

func (g *groupPacking) packTypes() []packType {
	types := make([]packType, len(g.types.candidates))
	for i, t := range g.types.candidates {
		types[i] = packType{alloc: t.alloc, price: g.types.prices[i]}
	}
	return types
}

// fixed are the fixed nodes as the packer sees them: what their unmovable pods and daemonsets
// use, and the shapes whose pods their pods' anti-affinity does not keep away.
func (g *groupPacking) fixed() []packFixed {
	representative := make([]*podInfo, len(g.shapes))
	for _, p := range g.movable {
		representative[g.shape[p]] = p
	}
	fixed := make([]packFixed, len(g.fixedNodes))
	for i, n := range g.fixedNodes {
		used := slices.Clone(n.used)
		for _, p := range n.placed {
			if canMove(p, g.from) {
				used.sub(p.requests)
			}
		}
		fixed[i] = packFixed{used: used, accepts: func(shape int) bool {
			for _, grp := range representative[shape].matchesHostAnti {
				if n.owners[grp.id] > 0 {
					return false
				}
			}
			return true
		}}
	}
	return fixed
}

// current is the group's packing as it stands; false if a node's type is not in the group's
// list, which leaves the node, and the group, as they are.
func (g *groupPacking) current() ([]packedBin, bool) {
	current := make([]packedBin, 0, len(g.group))
	for _, n := range g.group {
		b := packedBin{typ: slices.Index(g.types.candidates, n.candidates[n.first]), fixed: slices.Index(g.fixedNodes, n), counts: make([]int, len(g.shapes))}
		if b.typ < 0 {
			return nil, false
		}
		for _, p := range n.placed {
			if canMove(p, g.from) {
				b.counts[g.shape[p]]++
			}
		}
		current = append(current, b)
	}
	return current, true
}

// apply moves the group's movable pods as the bins have them, the free nodes left empty
// dropped, unless a node refuses a pod or the group then costs no less: then every pod goes
// back to its node. It reports whether the pods moved.
func (s *scheduler) apply(g *groupPacking, bins []packedBin) bool {
	for i := len(g.movable) - 1; i >= 0; i-- {
		s.take(g.movable[i], g.origin[g.movable[i]])
	}
	for _, n := range g.group {
		s.widen(n, g.types)
	}
	byShape := make([][]*podInfo, len(g.shapes))
	for _, p := range g.movable {
		byShape[g.shape[p]] = append(byShape[g.shape[p]], p)
	}
	free := 0
	placed := true
	for _, b := range bins {
		var to *node
		if b.fixed >= 0 {
			to = g.fixedNodes[b.fixed]
		} else {
			to = g.freeNodes[free]
			free++
		}
		for shape, n := range b.counts {
			for _, p := range byShape[shape][:n] {
				placed = s.relocate(p, to) && placed
			}
			byShape[shape] = byShape[shape][n:]
		}
	}
	if !placed || s.price(g.group) >= g.before*(1-1e-9) {
		s.restore(g)
		return false
	}
	for _, n := range g.freeNodes {
		if len(n.placed) == 0 {
			s.drop(n)
		}
	}
	return true
}

// restore puts the group back as it stood: every node's types and requirements, and every
// movable pod on the node it came from (which held it with them before).
func (s *scheduler) restore(g *groupPacking) {
	for i, n := range g.group {
		for _, p := range slices.Clone(n.placed) {
			if _, ok := g.shape[p]; ok {
				s.take(p, n)
			}
		}
		s.room.remove(n)
		n.narrow(&g.sized[i])
		s.room.insert(n)
	}
	for _, p := range g.movable {
		s.rebind(g.origin[p], p, nil)
	}
}

// holdsEvery reports whether the bins hold every pod of the shapes, each once.
func holdsEvery(bins []packedBin, shapes []packShape) bool {
	held := make([]int, len(shapes))
	for _, b := range bins {
		for s, n := range b.counts {
			held[s] += n
		}
	}
	return slices.EqualFunc(held, shapes, func(n int, s packShape) bool { return n == s.count })
}

// canMove reports whether the packer may move a placed pod: one bound at or after from, with no
// host ports (which would need the packer to keep pods binding one port apart).
func canMove(p *podInfo, from int) bool {
	return p.binding >= from && len(p.hostPorts) == 0
}

// relocate puts pod p, taken off its node, on node to, whose topology domains are its old
// node's: its terms were checked in those domains, so only its requests and requirements are
// checked again. Unlike shrink's moves, to may have been opened after p's binding: every pod
// bound from hostFreeFrom on is counted by no hostname-level term, so which node it is on,
// within its domains, changes nothing a pod was checked against. It reports false if the node
// cannot take it.
func (s *scheduler) relocate(p *podInfo, to *node) bool {
	a := &p.attempts[0]
	allowed := make([]domainSet, len(p.keys))
	for i, k := range p.keys {
		allowed[i] = newDomainSet(len(k.values.names))
		if v := to.domain[k.index]; v >= 0 {
			allowed[i].add(v)
		}
	}
	nw, refusal := s.constrain(to, p, a, allowed)
	if refusal != "" {
		return false
	}
	s.rebind(to, p, nw)
	return true
}

func (s *scheduler) price(group []*node) float64 {
	total := 0.0
	for _, n := range group {
		if len(n.placed) > 0 {
			total += n.prices[n.first]
		}
	}
	return total
}

// drop removes an empty new node from the plan.
func (s *scheduler) drop(n *node) {
	if n.indexed {
		s.room.remove(n)
		n.indexed = false
	}
	if n.cheapest != nil && n.prov.remaining != nil {
		n.prov.remaining.add(n.cheapest.capacity)
	}
	s.nodes = slices.DeleteFunc(s.nodes, func(o *node) bool { return o == n })
}
