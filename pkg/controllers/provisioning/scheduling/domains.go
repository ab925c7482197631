package scheduling

import (
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// domainSet is a set of a topology key's interned values.
type domainSet []uint64

func newDomainSet(size int) domainSet { return make(domainSet, (size+63)/64) }

func fullDomainSet(size int) domainSet {
	d := newDomainSet(size)
	for i := 0; i < size; i++ {
		d.add(i)
	}
	return d
}

func (d domainSet) has(i int) bool { return d[i/64]&(1<<(i%64)) != 0 }
func (d domainSet) add(i int)      { d[i/64] |= 1 << (i % 64) }
func (d domainSet) remove(i int)   { d[i/64] &^= 1 << (i % 64) }

func (d domainSet) and(o domainSet) {
	for i := range d {
		d[i] &= o[i]
	}
}

func (d domainSet) or(o domainSet) {
	for i := range d {
		d[i] |= o[i]
	}
}

func (d domainSet) empty() bool {
	for _, w := range d {
		if w != 0 {
			return false
		}
	}
	return true
}

// each calls f with every value in the set, in index order.
func (d domainSet) each(f func(int)) {
	for i, w := range d {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			f(i*64 + b)
			w &^= 1 << b
		}
	}
}

// topologyKey resolves a topology key, interning every value a node may carry for it: existing
// nodes' labels, provisioners' own labels, instance type labels and offerings. Zones and
// capacity types share the offerings' interners, so their domain sets are offering masks.
func (s *scheduler) topologyKey(name string) *topologyKey {
	if k, ok := s.keyIndex[name]; ok {
		return k
	}
	k := &topologyKey{index: len(s.keys), name: name}
	switch name {
	case corev1.LabelTopologyZone:
		k.values = s.zones
	case v1alpha5.CapacityTypeLabelKey:
		k.values = s.capacityTypes
	default:
		k.values = newInterner()
	}
	for _, l := range s.existingLabels {
		if v, ok := l[name]; ok {
			k.values.intern(v)
		}
	}
	for _, prov := range s.provisioners {
		if v, ok := prov.labels[name]; ok {
			k.values.intern(v)
		}
		if prov.chosenKeys.Has(name) {
			for _, v := range prov.requirements[name].Choices() {
				k.values.intern(v)
			}
		}
		for _, t := range prov.instanceTypes {
			if v, ok := t.labels[name]; ok {
				k.values.intern(v)
			}
		}
	}
	s.keyIndex[name] = k
	s.keys = append(s.keys, k)
	return k
}

// sortKeys orders a pod's keys so that the zone and capacity type, which decide offerings, are
// decided first on a new node, and the instance type's labels after them.
func sortKeys(keys []*topologyKey) {
	rank := func(k *topologyKey) int {
		switch k.name {
		case corev1.LabelTopologyZone:
			return 0
		case v1alpha5.CapacityTypeLabelKey:
			return 1
		}
		return 2
	}
	sort.Slice(keys, func(i, j int) bool {
		if rank(keys[i]) != rank(keys[j]) {
			return rank(keys[i]) < rank(keys[j])
		}
		return keys[i].index < keys[j].index
	})
}

// launchableValues are the values of key k that a node of prov with requirements reqs may
// carry: over candidates that fit used (nil: any) and meet reqs, in an available offering
// within the zone and capacity type masks. Empty means the node would not carry the label.
func (s *scheduler) launchableValues(prov *provisioner, reqs scheduling.Requirements, candidates []*instanceType, used resources, zones, capacityTypes uint64, k *topologyKey) domainSet {
	zones &= s.zones.mask(reqs[corev1.LabelTopologyZone])
	capacityTypes &= s.capacityTypes.mask(reqs[v1alpha5.CapacityTypeLabelKey])
	out := newDomainSet(len(k.values.names))
	r := reqs[k.name]
	for _, t := range candidates {
		if (used != nil && !within(t.alloc, used)) || !prov.compatibleType(t, reqs) {
			continue
		}
		for _, o := range t.offerings {
			if zones&(1<<o.zone) == 0 || capacityTypes&(1<<o.capacityType) == 0 {
				continue
			}
			switch {
			case k.name == corev1.LabelTopologyZone:
				out.add(o.zone)
				continue
			case k.name == v1alpha5.CapacityTypeLabelKey:
				out.add(o.capacityType)
				continue
			case prov.chosenKeys.Has(k.name):
				// The pool chooses the value whatever the instance type: any the node's
				// requirement on the key (the pool's, narrowed by its pods') allows.
				for v, name := range k.values.names {
					if r.Has(name) {
						out.add(v)
					}
				}
				return out
			case prov.fixedKeys.Has(k.name):
				// The provisioner's own labels are the same whatever the instance type.
				if v, ok := prov.labels[k.name]; ok && (r == nil || r.Has(v)) {
					out.add(k.values.index[v])
				}
				return out
			}
			if v, ok := t.labels[k.name]; ok && (r == nil || r.Has(v)) {
				out.add(k.values.index[v])
			}
			break
		}
	}
	return out
}

// chooseDomain picks, of the possible values of key k for new node n holding used, the one
// where the pod's spread groups on k have the fewest pods, the cheapest for n of those alike if
// k is the zone or capacity type (domainPrices, with ports the pod's host ports that types' own
// daemonsets may bind: spot prices differ by zone). A pod only counted
// on k, by others' spreads or its own affinity, goes where n launches cheapest, and among values
// priced alike, or for another key, where the groups counting it have the fewest. The plan binds
// pods in its order and the checker replays that order: spreading pods placed after such a pod
// go where its count lets them, and those placed before it, as most are (sortPods), keep their
// places whatever it adds. Balancing the pods only counted bought nothing a plan needs and made
// nodes pay the dearer zones' prices (docs/benchmarks.md, issue 38).
func (s *scheduler) chooseDomain(n *node, reqs scheduling.Requirements, p *podInfo, k *topologyKey, possible domainSet, used resources, typeKeys bool, ports []hostPort) int {
	var groups []*topologyGroup
	for _, t := range p.domainSpreads {
		if t.group.key == k {
			groups = append(groups, t.group)
		}
	}
	counted := len(groups) == 0
	if counted {
		for _, g := range p.matches {
			if g.key == k {
				groups = append(groups, g)
			}
		}
	}
	score := func(v int) int64 {
		var sum int64
		for _, g := range groups {
			sum += int64(g.domainCounts[v])
		}
		return sum
	}
	// The values that may win: for a spreading pod those with the fewest pods counted.
	contenders := possible
	if !counted {
		fewest := int64(math.MaxInt64)
		possible.each(func(v int) { fewest = min(fewest, score(v)) })
		contenders = newDomainSet(len(k.values.names))
		possible.each(func(v int) {
			if score(v) == fewest {
				contenders.add(v)
			}
		})
	}
	prices := s.domainPrices(n, reqs, k, contenders, used, typeKeys, ports)
	best, bestPrice, bestScore := -1, 0.0, int64(0)
	contenders.each(func(v int) {
		var price float64
		if prices != nil {
			price = prices[v]
		}
		if sc := score(v); best < 0 || price < bestPrice || price == bestPrice && sc < bestScore {
			best, bestPrice, bestScore = v, price, sc
		}
	})
	return best
}

// domainPrices is, per value of key k, the price of new node n holding used with its
// requirements reqs, were it to launch now in that zone or as that capacity type: the cheapest
// there of the types it may launch as, those that hold used within the pool's limits, whose
// daemonsets bind none of ports, and that meet reqs when typeKeys (the pod narrowed keys an
// instance type decides); +Inf where none has an offering; nil for another key, whose values no
// offering prices. Only the contenders are priced, and only the cheapest of them exactly: the
// others' entries are at least their own cheapest, and tell only that they are not the cheapest.
func (s *scheduler) domainPrices(n *node, reqs scheduling.Requirements, k *topologyKey, contenders domainSet, used resources, typeKeys bool, ports []hostPort) []float64 {
	zoneKey := k.name == corev1.LabelTopologyZone
	if !zoneKey && k.name != v1alpha5.CapacityTypeLabelKey {
		return nil
	}
	zones := n.zones & s.zones.mask(reqs[corev1.LabelTopologyZone])
	capacityTypes := n.capacityTypes & s.capacityTypes.mask(reqs[v1alpha5.CapacityTypeLabelKey])
	prices := make([]float64, len(k.values.names))
	for v := range prices {
		prices[v] = math.Inf(1)
	}
	// The candidates are sorted by their price over all of the node's offerings, which no
	// value's price is below: past the cheapest value's price, no later type lowers it or
	// brings another value down to it.
	cheapest := math.Inf(1)
	for i := n.first; i < len(n.candidates) && n.prices[i] <= cheapest; i++ {
		t := n.candidates[i]
		if !within(t.alloc, used) || typeKeys && !n.prov.compatibleType(t, reqs) || !n.prov.withinLimits(n.cheapest, t) || portsConflict(t.daemonPorts, ports) {
			continue
		}
		contenders.each(func(v int) {
			if zoneKey {
				prices[v] = min(prices[v], t.price(1<<v, capacityTypes))
			} else {
				prices[v] = min(prices[v], t.price(zones, 1<<v))
			}
			cheapest = min(cheapest, prices[v])
		})
	}
	return prices
}

// allowedDomains are, per key of the pod's, the values its terms on the key, and the
// anti-affinity of pods already in each domain, allow; or the first key with none.
func (s *scheduler) allowedDomains(p *podInfo, a *attempt) ([]domainSet, *topologyKey) {
	if len(p.keys) == 0 {
		return nil, nil
	}
	allowed := make([]domainSet, len(p.keys))
	for i, k := range p.keys {
		allowed[i] = fullDomainSet(len(k.values.names))
	}
	for _, t := range p.domainSpreads {
		if t.soft && !a.soft {
			continue
		}
		g := t.group
		domains := s.domains(a, g)
		minCount := int32(math.MaxInt32)
		var count int32
		domains.each(func(v int) {
			count++
			minCount = min(minCount, g.domainCounts[v])
		})
		if count < g.minDomains || count == 0 {
			minCount = 0
		}
		keep := newDomainSet(len(g.key.values.names))
		domains.each(func(v int) {
			if g.domainCounts[v]+b2i(t.self)-minCount <= g.maxSkew {
				keep.add(v)
			}
		})
		allowed[p.slot(g.key)].and(keep)
	}
	for _, t := range p.domainAffinities {
		if (t.soft && !a.soft) || (t.self && t.group.total == 0) {
			continue
		}
		keep := newDomainSet(len(t.group.key.values.names))
		for v, c := range t.group.domainCounts {
			if c > 0 {
				keep.add(v)
			}
		}
		allowed[p.slot(t.group.key)].and(keep)
	}
	for _, t := range p.domainAntiAffinities {
		if t.soft && !a.soft {
			continue
		}
		d := allowed[p.slot(t.group.key)]
		for v, c := range t.group.domainCounts {
			if c > 0 {
				d.remove(v)
			}
		}
	}
	for _, g := range p.matchesDomainAnti {
		d := allowed[p.slot(g.key)]
		for v, c := range g.domainOwners {
			if c > 0 {
				d.remove(v)
			}
		}
	}
	for i, d := range allowed {
		if !p.owns[i] {
			continue
		}
		if d.and(s.reachable(p, a, p.keys[i])); d.empty() {
			return nil, p.keys[i]
		}
	}
	return allowed, nil
}

// domains are the values of g's key that a pod with the attempt's required node constraints
// could be in: those of existing nodes and those any provisioner could launch a node with,
// among the nodes g's node affinity and taint policies include.
func (s *scheduler) domains(a *attempt, g *topologyGroup) domainSet {
	cacheKey := domainsCacheKey{what: g.domainsKey}
	var base scheduling.Requirements
	if g.honorAffinity {
		cacheKey.requirements = a.baseKey
		base = a.base
	}
	// Provisioners' nodes are counted as carrying every key a spread requires: a larger set of
	// domains only lowers the minimum the skew is measured from.
	return s.domainsWhere(g.key, base, func(n *node) bool { return s.taintsAllow(g, n.taints) && carries(n, g.requiredKeys) },
		func(prov *provisioner) bool { return s.taintsAllow(g, prov.taints) }, cacheKey)
}

// reachable are the values of key k the pod's own node constraints, volumes and tolerations
// allow.
func (s *scheduler) reachable(p *podInfo, a *attempt, k *topologyKey) domainSet {
	return s.domainsWhere(k, a.reach, func(n *node) bool { return scheduling.UntoleratedTaint(p.pod.Spec.Tolerations, n.taints) == nil },
		func(prov *provisioner) bool { return p.tolerates[prov.index] }, domainsCacheKey{what: k.name, tolerations: p.tolerationsKey, requirements: a.reachKey})
}

// domainsCacheKey identifies a set of domains: what decides them besides node requirements
// (a key, a group's policies), the tolerations that do, and the requirements, rendered.
type domainsCacheKey struct {
	what, tolerations, requirements string
}

// domainsWhere are the values of key k on the existing nodes that meet base and existingOK, and
// on the nodes that the provisioners provOK allows could launch meeting base; cached under
// cacheKey.
func (s *scheduler) domainsWhere(k *topologyKey, base scheduling.Requirements, existingOK func(*node) bool, provOK func(*provisioner) bool, cacheKey domainsCacheKey) domainSet {
	if d, ok := s.domainCache[cacheKey]; ok {
		return d
	}
	d := newDomainSet(len(k.values.names))
	for _, n := range s.nodes[:s.existing] {
		if v := n.domain[k.index]; v >= 0 && base.MatchesLabels(n.labels) && existingOK(n) {
			d.add(v)
		}
	}
	for _, prov := range s.provisioners {
		if !provOK(prov) {
			continue
		}
		reqs, ok := mergeRequirements(&node{requirements: prov.requirements, prov: prov}, base)
		if !ok {
			continue
		}
		d.or(s.launchableValues(prov, reqs, prov.instanceTypes, nil, prov.zones, prov.capacityTypes, k))
	}
	s.domainCache[cacheKey] = d
	return d
}

// carries reports whether the node has decided a value for each of keys.
func carries(n *node, keys []*topologyKey) bool {
	for _, k := range keys {
		if n.domain[k.index] < 0 {
			return false
		}
	}
	return true
}

// taintsAllow reports whether a node with taints is among g's nodes under its nodeTaintsPolicy.
func (s *scheduler) taintsAllow(g *topologyGroup, taints []corev1.Taint) bool {
	return !g.honorTaints || scheduling.UntoleratedTaint(g.tolerations, taints) == nil
}

func (s *scheduler) unknownDomains() []int {
	d := make([]int, len(s.keys))
	for i := range d {
		d[i] = -1
	}
	return d
}
