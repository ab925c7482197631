package scheduling

import (
	"fmt"
	"slices"

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
	// ports are the host ports its pods and daemonsets bind.
	ports []hostPort

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
	// domain is, per topology key index, the node's interned value of the key once decided,
	// or -1.
	domain []int

	// counts and owners are indexed by topology group: pods here that match the group's
	// selector, and pods here that carry the group's anti-affinity term.
	counts []int32
	owners []int32
	pods   []*corev1.Pod

	// seq is a new node's opening order and roomKey its cpu room when the roomIndex last
	// placed it, which finds its entry; indexed is whether the index holds it.
	seq     int
	roomKey int64
	indexed bool
	// placed are the pods placed here in this pass; opened is how many bindings preceded the
	// node's first.
	placed []*podInfo
	opened int
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
	domain        []int
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
		if !prov.typeDecidedKey(k) {
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

// typeDecidedKey reports whether compatibleType checks key k against instance type labels.
func (prov *provisioner) typeDecidedKey(k string) bool {
	return k != corev1.LabelTopologyZone && k != v1alpha5.CapacityTypeLabelKey && !prov.fixedKeys.Has(k) && !prov.chosenKeys.Has(k)
}

// typeDecided reports whether compatibleType checks any of reqs' keys against instance type
// labels.
func (prov *provisioner) typeDecided(reqs scheduling.Requirements) bool {
	for k := range reqs {
		if prov.typeDecidedKey(k) {
			return true
		}
	}
	return false
}

// constrain computes the state of new node n with pod p added, or says why p cannot go there.
func (s *scheduler) constrain(n *node, p *podInfo, a *attempt, allowed []domainSet) (*narrowing, string) {
	reqs, ok := mergeRequirements(n, a.requirements)
	if !ok {
		return nil, "no instance type meets the pod's node selector and affinity"
	}
	changed := len(a.requirements) > 0
	// The candidates already meet the node's requirements: only keys narrowed here that an
	// instance type's labels decide need checking again, and the common narrowing, to a zone or
	// capacity type, has none.
	typeKeysChanged := n.prov.typeDecided(a.requirements)
	domain, pinned := n.domain, false
	// Pods on a node without a decided value could not be counted in any domain, so a node
	// whose pods matter to a topology key gets its value now; narrowing its requirements to it
	// narrows the instance types and offerings it may launch as.
	// A pod's host ports keep the node off the instance types whose own daemonsets bind them.
	var ports []hostPort
	if len(p.hostPorts) > 0 && n.prov.typeDaemonPorts {
		ports = p.hostPorts
	}
	if len(p.keys) > 0 {
		used := n.used.plus(p.requests)
		for i, k := range p.keys {
			if v := domain[k.index]; v >= 0 {
				if !allowed[i].has(v) {
					return nil, fmt.Sprintf("the node's %s is not one the topology terms allow", k.name)
				}
				continue
			}
			var possible domainSet
			if k.name == corev1.LabelTopologyZone {
				possible = domainSet{n.zones & s.zones.mask(reqs[corev1.LabelTopologyZone])}
			} else {
				possible = s.launchableValues(n.prov, reqs, n.candidates[n.first:], used, n.zones, n.capacityTypes, k)
			}
			if possible.empty() {
				// The node will not carry the label: no term of the pod's own may need it.
				if p.owns[i] {
					return nil, fmt.Sprintf("no instance type carries %s, which the pod's topology terms need", k.name)
				}
				continue
			}
			possible.and(allowed[i])
			if possible.empty() {
				return nil, fmt.Sprintf("no instance type gives a %s the topology terms allow", k.name)
			}
			v := s.chooseDomain(n, reqs, p, k, possible, used, typeKeysChanged, ports)
			r, _ := scheduling.NewRequirement(corev1.NodeSelectorOpIn, k.values.names[v])
			if existing, ok := reqs[k.name]; ok {
				r = existing.Intersect(r)
			}
			if !changed {
				// reqs is still the node's own; mergeRequirements copied it otherwise.
				reqs = reqs.Copy()
			}
			if !pinned {
				domain = append([]int(nil), domain...)
				pinned = true
			}
			reqs[k.name] = r
			domain[k.index] = v
			changed = true
			typeKeysChanged = typeKeysChanged || n.prov.typeDecidedKey(k.name)
		}
	}
	// A pod counted by a spread that honours node affinity must be on a node that either
	// surely qualifies or surely does not.
	for _, g := range p.matchesEligibility {
		if g.eligibility == nil {
			continue
		}
		if forced, ok := mergeRequirements(&node{requirements: reqs, prov: n.prov}, g.eligibility); ok {
			if !reqs.Implies(g.eligibility) {
				reqs, changed = forced, true
				typeKeysChanged = typeKeysChanged || n.prov.typeDecided(g.eligibility)
			}
		}
	}
	if ports != nil {
		if !slices.ContainsFunc(n.candidates[n.first:], func(t *instanceType) bool { return !portsConflict(t.daemonPorts, ports) }) {
			return nil, daemonPortRefusal
		}
		changed, typeKeysChanged = true, true
	}
	used := n.used.plus(p.requests)
	out := &narrowing{requirements: reqs, zones: n.zones, capacityTypes: n.capacityTypes, domain: domain}
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
			return nil, "no instance type has room for the pod's requests and daemonset overhead"
		}
	} else if !s.narrowCandidates(n, out, used, typeKeysChanged, ports) {
		return nil, "no instance type has room for the pod's requests and daemonset overhead and meets its requirements in an available offering"
	}
	if !n.firstWithinLimits(out, used) {
		return nil, "no instance type fits within the provisioner's limits"
	}
	if refusal := strictMinValuesRefusal(n, out, used); refusal != "" {
		return nil, refusal
	}
	return out, ""
}

// firstWithinLimits moves out.first on to the cheapest type that holds used within the
// provisioner's limits, replacing node n's; false if none does. The cheapest type that holds
// the pods may take the pool past its limits where a dearer, smaller one does not: the node
// launches as the cheapest within them (finish drops the others from its list), as upstream
// drops the types over a pool's remaining resources.
func (n *node) firstWithinLimits(out *narrowing, used resources) bool {
	if n.prov.withinLimits(n.cheapest, out.candidates[out.first]) {
		return true
	}
	i := slices.IndexFunc(out.candidates[out.first:], func(t *instanceType) bool {
		return within(t.alloc, used) && n.prov.withinLimits(n.cheapest, t)
	})
	if i < 0 {
		return false
	}
	out.first += i
	return true
}

// compatibleNew is the cheap part of checking a pod against a new node; constrain does the rest.
func (s *scheduler) compatibleNew(n *node, p *podInfo, a *attempt, allowed []domainSet) bool {
	if !p.tolerates[n.prov.index] || portsConflict(n.ports, p.hostPorts) {
		return false
	}
	for i, k := range p.keys {
		// A decided zone is the node's zone mask, which is at hand.
		if k.name == corev1.LabelTopologyZone {
			if n.zones&allowed[i][0] == 0 {
				return false
			}
		} else if v := n.domain[k.index]; v >= 0 && !allowed[i].has(v) {
			return false
		}
	}
	return s.topologyAllowsNode(n, p, a)
}

func (s *scheduler) compatibleExisting(n *node, p *podInfo, a *attempt, allowed []domainSet) bool {
	if scheduling.UntoleratedTaint(p.pod.Spec.Tolerations, n.taints) != nil || !a.requirements.MatchesLabels(n.labels) || portsConflict(n.ports, p.hostPorts) {
		return false
	}
	if p.existingVolumes != nil && !slices.ContainsFunc(p.existingVolumes, func(r scheduling.Requirements) bool { return r.MatchesLabels(n.labels) }) {
		return false
	}
	for i, k := range p.keys {
		v := n.domain[k.index]
		if v < 0 {
			// A node without the label is in no domain: the pod's own terms need one, and
			// where it is only counted it is counted nowhere.
			if p.owns[i] {
				return false
			}
			continue
		}
		if !allowed[i].has(v) {
			return false
		}
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
		if t.soft && !a.soft {
			continue
		}
		if n.counts[t.group.id] == 0 && (!t.self || t.group.total != 0) {
			return false
		}
	}
	for _, t := range p.hostAntiAffinities {
		if t.soft && !a.soft {
			continue
		}
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

// narrow gives the node nw's types and requirements, and commits its cheapest type.
func (n *node) narrow(nw *narrowing) {
	n.requirements, n.candidates, n.prices, n.first = nw.requirements, nw.candidates, nw.prices, nw.first
	n.zones, n.capacityTypes, n.maxAlloc, n.domain = nw.zones, nw.capacityTypes, nw.maxAlloc, nw.domain
	n.commitFirst()
}

// narrowing is the node's types and requirements as they stand.
func (n *node) narrowing() narrowing {
	return narrowing{requirements: n.requirements, candidates: n.candidates, prices: n.prices, first: n.first,
		zones: n.zones, capacityTypes: n.capacityTypes, maxAlloc: n.maxAlloc, domain: n.domain}
}

// commitFirst makes candidates[first] the type counted against the provisioner's limits.
func (n *node) commitFirst() {
	if cheapest := n.candidates[n.first]; cheapest != n.cheapest {
		n.prov.commit(n.cheapest, cheapest)
		n.cheapest = cheapest
	}
}

// canLaunchAs reports whether type t holds what the node uses and launching it as t in place
// of its cheapest type keeps the provisioner within its limits (its cheapest type does).
func (n *node) canLaunchAs(t *instanceType) bool {
	return within(t.alloc, n.used) && (t == n.cheapest || n.prov.withinLimits(n.cheapest, t))
}

// place binds the pod to the node and records it in the topology counts, and, while pods are
// placed one at a time, in the growth index.
func (s *scheduler) place(n *node, p *podInfo, nw *narrowing) {
	if n.indexed {
		// The node's room is its key in the index: take it out while it changes.
		s.room.remove(n)
		defer s.room.insert(n)
	}
	if nw != nil {
		n.narrow(nw)
	}
	n.used.add(p.requests)
	if n.existing == nil && s.growth != nil {
		s.growth.changedNode(n)
	}
	n.ports = append(n.ports, p.hostPorts...)
	n.pods = append(n.pods, p.pod)
	n.placed = append(n.placed, p)
	p.binding = len(s.results.Bindings)
	s.bound = append(s.bound, p)
	s.results.Bindings = append(s.results.Bindings, Binding{Pod: p.pod, NodeName: n.name()})
	s.count(n, p.pod, p.matches, p.owned)
}

// count records a pod on a node in the groups it matches and the anti-affinity terms it owns.
func (s *scheduler) count(n *node, pod *corev1.Pod, matches []*topologyGroup, owned []*topologyGroup) {
	for _, g := range matches {
		g.total++
		if g.key == nil {
			if n.counts[g.id] == 0 && n.existing == nil {
				g.newNodesCounted++
			}
			n.counts[g.id]++
			continue
		}
		if v := n.domain[g.key.index]; v >= 0 && s.eligible(n, g) {
			g.domainCounts[v]++
		}
	}
	for _, g := range owned {
		if g.key == nil {
			if n.owners[g.id] == 0 && n.existing == nil {
				g.newNodesOwned++
			}
			n.owners[g.id]++
		} else if v := n.domain[g.key.index]; v >= 0 {
			g.domainOwners[v]++
		}
	}
}

func (s *scheduler) eligible(n *node, g *topologyGroup) bool {
	if !s.taintsAllow(g, n.taints) || !carries(n, g.requiredKeys) {
		return false
	}
	if g.eligibility == nil {
		return true
	}
	if n.existing != nil {
		return g.eligibility.MatchesLabels(n.labels)
	}
	return n.requirements.Implies(g.eligibility)
}
