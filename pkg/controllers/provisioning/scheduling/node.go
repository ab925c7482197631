package scheduling

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// node is an existing node (existing != nil) or one opened in this pass.
type node struct {
	hostname string
	existing *corev1.Node
	labels   map[string]string
	taints   []corev1.Taint
	alloc    resources
	used     resources

	prov         *provisioner
	requirements scheduling.Requirements
	// candidates may launch the node, sorted by prices (cheapest first) under the node's zone
	// and capacity type masks. Those before first no longer fit; those after may not either,
	// and are dropped when the node is rendered.
	candidates []*instanceType
	prices     []float64
	first      int
	maxAlloc   resources
	// cheapest is the instance type counted against the provisioner's limits.
	cheapest      *instanceType
	zones         uint64
	capacityTypes uint64

	// counts and owners are indexed by topology group: pods here that match the group's
	// selector, and pods here that carry the group's anti-affinity term.
	counts []int32
	owners []int32
	pods   []*corev1.Pod
}

func (n *node) name() string {
	if n.existing != nil {
		return n.existing.Name
	}
	return n.hostname
}

func (n *node) fits(requests resources) bool { return fitsWith(n.alloc, n.used, requests) }

func maxAllocatable(types []*instanceType) resources {
	var out resources
	for _, t := range types {
		if out == nil {
			out = append(resources(nil), t.alloc...)
			continue
		}
		for i, v := range t.alloc {
			if v > out[i] {
				out[i] = v
			}
		}
	}
	return out
}

// narrowing is a new node's state after a pod is added.
type narrowing struct {
	requirements  scheduling.Requirements
	candidates    []*instanceType
	prices        []float64
	first         int
	zones         uint64
	capacityTypes uint64
	maxAlloc      resources
}

// mergeRequirements adds pod requirements to a new node's, knowing which labels the node will
// carry: the provisioner's own, those from the instance type, and a hostname of unknown value.
func mergeRequirements(n *node, add scheduling.Requirements) (scheduling.Requirements, bool) {
	if len(add) == 0 {
		return n.requirements, true
	}
	out := n.requirements.Copy()
	for k, r := range add {
		if k == corev1.LabelHostname {
			// The node will have a hostname, but not one a pod can name.
			if !r.AllowsUnknownValue() {
				return nil, false
			}
			continue
		}
		if existing, ok := out[k]; ok {
			r = existing.Intersect(r)
		} else if !n.prov.typeKeys.Has(k) && !r.AllowsAbsent() {
			return nil, false
		}
		if !r.Satisfiable() {
			return nil, false
		}
		out[k] = r
	}
	return out, true
}

// compatibleType reports whether an instance type can carry labels meeting the requirements;
// zone and capacity type are checked against offerings separately.
func (prov *provisioner) compatibleType(t *instanceType, reqs scheduling.Requirements) bool {
	for k, r := range reqs {
		if k == corev1.LabelTopologyZone || k == v1alpha5.CapacityTypeLabelKey || prov.fixedKeys.Has(k) {
			continue
		}
		if v, ok := t.labels[k]; ok {
			if !r.Has(v) {
				return false
			}
		} else if !r.AllowsAbsent() {
			return false
		}
	}
	return true
}

// constrain computes the state of new node n with pod p added, or reports that p cannot go there.
func (s *scheduler) constrain(n *node, p *podInfo, a *attempt, zones uint64) (*narrowing, bool) {
	reqs, ok := mergeRequirements(n, a.requirements)
	if !ok {
		return nil, false
	}
	changed := len(a.requirements) > 0
	// Pods on a zone-less node could not be counted in any zone's spread, so a node whose
	// pods matter to a zone constraint gets its zone now.
	if p.zoneRelevant {
		allowed := n.zones & s.zones.mask(reqs[corev1.LabelTopologyZone]) & zones
		if allowed == 0 {
			return nil, false
		}
		if zr := reqs[corev1.LabelTopologyZone]; zr == nil || !zr.AllowsOneValue() {
			z := s.chooseZone(p, allowed)
			reqs = reqs.Copy()
			zr, _ := scheduling.NewRequirement(corev1.NodeSelectorOpIn, s.zones.names[z])
			if existing, ok := reqs[corev1.LabelTopologyZone]; ok {
				zr = existing.Intersect(zr)
			}
			reqs[corev1.LabelTopologyZone] = zr
			changed = true
		}
	}
	// A pod counted by a zone spread that honours node affinity must be on a node that
	// either surely qualifies or surely does not.
	for _, g := range p.matchesEligibility {
		if forced, ok := mergeRequirements(&node{requirements: reqs, prov: n.prov}, g.eligibility); ok {
			if !reqs.Implies(g.eligibility) {
				reqs, changed = forced, true
			}
		}
	}
	used := n.used.plus(p.requests)
	out := &narrowing{requirements: reqs, zones: n.zones, capacityTypes: n.capacityTypes}
	if !changed {
		out.candidates, out.prices, out.maxAlloc = n.candidates, n.prices, n.maxAlloc
		out.first = -1
		for i := n.first; i < len(n.candidates); i++ {
			if within(n.candidates[i].alloc, used) {
				out.first = i
				break
			}
		}
		if out.first < 0 {
			return nil, false
		}
	} else {
		out.zones = s.zones.mask(reqs[corev1.LabelTopologyZone])
		out.capacityTypes = s.capacityTypes.mask(reqs[v1alpha5.CapacityTypeLabelKey])
		for _, t := range n.candidates[n.first:] {
			if !within(t.alloc, used) || !n.prov.compatibleType(t, reqs) {
				continue
			}
			price := t.price(out.zones, out.capacityTypes)
			if math.IsInf(price, 1) {
				continue
			}
			out.candidates = append(out.candidates, t)
			out.prices = append(out.prices, price)
		}
		if len(out.candidates) == 0 {
			return nil, false
		}
		sort.Sort(byPrice{out})
		out.maxAlloc = maxAllocatable(out.candidates)
		var reachable uint64
		for _, t := range out.candidates {
			reachable |= t.zones(out.capacityTypes)
		}
		out.zones &= reachable
	}
	if !n.prov.withinLimits(n.cheapest, out.candidates[out.first]) {
		return nil, false
	}
	return out, true
}

type byPrice struct{ n *narrowing }

func (b byPrice) Len() int { return len(b.n.candidates) }
func (b byPrice) Less(i, j int) bool {
	if b.n.prices[i] != b.n.prices[j] {
		return b.n.prices[i] < b.n.prices[j]
	}
	return b.n.candidates[i].it.Name < b.n.candidates[j].it.Name
}
func (b byPrice) Swap(i, j int) {
	b.n.candidates[i], b.n.candidates[j] = b.n.candidates[j], b.n.candidates[i]
	b.n.prices[i], b.n.prices[j] = b.n.prices[j], b.n.prices[i]
}

// chooseZone pins a node to the allowed zone where the pod's spread groups, or else the groups
// it is counted in, have the fewest pods.
func (s *scheduler) chooseZone(p *podInfo, allowed uint64) int {
	best, bestScore := -1, int64(math.MaxInt64)
	for z := range s.zones.names {
		if allowed&(1<<z) == 0 {
			continue
		}
		var score int64
		if len(p.zoneSpreads) > 0 {
			for _, t := range p.zoneSpreads {
				score += int64(t.group.zoneCounts[z])
			}
		} else {
			for _, g := range p.matches {
				if g.zoneKeyed {
					score += int64(g.zoneCounts[z])
				}
			}
		}
		if score < bestScore {
			best, bestScore = z, score
		}
	}
	return best
}

// compatibleNew is the cheap part of checking a pod against a new node; constrain does the rest.
func (s *scheduler) compatibleNew(n *node, p *podInfo, a *attempt, zones uint64) bool {
	if !p.tolerates[n.prov.index] {
		return false
	}
	if p.zoneRelevant && n.zones&zones == 0 {
		return false
	}
	return s.topologyAllowsNode(n, p, a)
}

func (s *scheduler) compatibleExisting(n *node, p *podInfo, a *attempt, zones uint64) bool {
	if scheduling.UntoleratedTaint(p.pod.Spec.Tolerations, n.taints) != nil || !a.requirements.MatchesLabels(n.labels) {
		return false
	}
	if p.ownsZone && n.zones&zones == 0 {
		return false
	}
	if p.zoneRelevant && n.zones != 0 && n.zones&zones == 0 {
		return false
	}
	return s.topologyAllowsNode(n, p, a)
}

// topologyAllowsNode checks the pod's hostname-keyed terms, and the anti-affinity of pods
// already on the node, against the node.
func (s *scheduler) topologyAllowsNode(n *node, p *podInfo, a *attempt) bool {
	for _, t := range p.hostSpreads {
		if t.soft && !a.soft {
			continue
		}
		// A new node can always be opened, so the least loaded hostname domain has none.
		if n.counts[t.group.id]+b2i(t.self) > t.group.maxSkew {
			return false
		}
	}
	for _, t := range p.hostAffinities {
		if n.counts[t.group.id] == 0 && (!t.self || t.group.total != 0) {
			return false
		}
	}
	for _, t := range p.hostAntiAffinities {
		if n.counts[t.group.id] > 0 {
			return false
		}
	}
	for _, g := range p.matchesHostAnti {
		if n.owners[g.id] > 0 {
			return false
		}
	}
	return true
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// allowedZones are the zones the pod's zone-keyed terms, and the anti-affinity of pods already
// in each zone, allow.
func (s *scheduler) allowedZones(p *podInfo, a *attempt) uint64 {
	mask := s.zones.all()
	if !p.zoneRelevant {
		return mask
	}
	for _, t := range p.zoneSpreads {
		if t.soft && !a.soft {
			continue
		}
		g := t.group
		domains := s.domains(a)
		minCount := int32(math.MaxInt32)
		var count int32
		for z := range s.zones.names {
			if domains&(1<<z) != 0 {
				count++
				minCount = min(minCount, g.zoneCounts[z])
			}
		}
		if count < g.minDomains || count == 0 {
			minCount = 0
		}
		var allowed uint64
		for z := range s.zones.names {
			if domains&(1<<z) != 0 && g.zoneCounts[z]+b2i(t.self)-minCount <= g.maxSkew {
				allowed |= 1 << z
			}
		}
		mask &= allowed
	}
	for _, t := range p.zoneAffinities {
		if t.self && t.group.total == 0 {
			continue
		}
		var allowed uint64
		for z := range s.zones.names {
			if t.group.zoneCounts[z] > 0 {
				allowed |= 1 << z
			}
		}
		mask &= allowed
	}
	for _, t := range p.zoneAntiAffinities {
		for z := range s.zones.names {
			if t.group.zoneCounts[z] > 0 {
				mask &^= 1 << z
			}
		}
	}
	for _, g := range p.matchesZoneAnti {
		for z := range s.zones.names {
			if g.zoneOwners[z] > 0 {
				mask &^= 1 << z
			}
		}
	}
	return mask
}

// domains are the zones a pod with the attempt's required node constraints could be in: those
// of existing nodes it selects and those any provisioner could launch a node it selects in.
// Taints do not matter, as kube-scheduler counts tainted nodes' domains too.
func (s *scheduler) domains(a *attempt) uint64 {
	if d, ok := s.zoneDomains[a.baseKey]; ok {
		return d
	}
	var d uint64
	for _, n := range s.nodes[:s.existing] {
		if a.base.MatchesLabels(n.labels) {
			d |= n.zones
		}
	}
	for _, prov := range s.provisioners {
		reqs, ok := mergeRequirements(&node{requirements: prov.requirements, prov: prov}, a.base)
		if !ok {
			continue
		}
		zones := s.zones.mask(reqs[corev1.LabelTopologyZone])
		capacityTypes := s.capacityTypes.mask(reqs[v1alpha5.CapacityTypeLabelKey])
		for _, t := range prov.instanceTypes {
			if prov.compatibleType(t, reqs) {
				d |= t.zones(capacityTypes) & zones
			}
		}
	}
	s.zoneDomains[a.baseKey] = d
	return d
}

// place binds the pod to the node and records it in the topology counts.
func (s *scheduler) place(n *node, p *podInfo, nw *narrowing) {
	if nw != nil {
		n.requirements, n.candidates, n.prices, n.first = nw.requirements, nw.candidates, nw.prices, nw.first
		n.zones, n.capacityTypes, n.maxAlloc = nw.zones, nw.capacityTypes, nw.maxAlloc
		cheapest := n.candidates[n.first]
		if cheapest != n.cheapest {
			n.prov.commit(n.cheapest, cheapest)
			n.cheapest = cheapest
		}
	}
	n.used.add(p.requests)
	n.pods = append(n.pods, p.pod)
	s.results.Bindings = append(s.results.Bindings, Binding{Pod: p.pod, NodeName: n.name()})
	s.count(n, p.pod, p.matches, p.owned)
}

// count records a pod on a node in the groups it matches and the anti-affinity terms it owns.
func (s *scheduler) count(n *node, pod *corev1.Pod, matches []*topologyGroup, owned []*topologyGroup) {
	zone, zoned := single(n.zones)
	if n.existing != nil {
		zone, zoned = -1, false
		if z, ok := n.labels[corev1.LabelTopologyZone]; ok {
			zone, zoned = s.zones.index[z], true
		}
	}
	for _, g := range matches {
		g.total++
		if !g.zoneKeyed {
			n.counts[g.id]++
			continue
		}
		if zoned && s.eligible(n, g) {
			g.zoneCounts[zone]++
		}
	}
	for _, g := range owned {
		if !g.zoneKeyed {
			n.owners[g.id]++
		} else if zoned {
			g.zoneOwners[zone]++
		}
	}
}

func (s *scheduler) eligible(n *node, g *topologyGroup) bool {
	if g.eligibility == nil {
		return true
	}
	if n.existing != nil {
		return g.eligibility.MatchesLabels(n.labels)
	}
	return n.requirements.Implies(g.eligibility)
}
