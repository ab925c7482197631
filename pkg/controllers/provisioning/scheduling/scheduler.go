// Package scheduling decides where pending pods go: onto existing nodes with room, or onto new
// nodes that it sizes from the provisioners' instance types at the lowest price. It is pure:
// it reads a snapshot and returns a plan, with no API calls.
package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/scheduling"
)

type scheduler struct {
	resources     resourceIndex
	zones         *interner
	capacityTypes *interner
	topology      *topologyGroups
	// keys are the topology keys other than the hostname that pods' terms use, by index.
	keys     []*topologyKey
	keyIndex map[string]*topologyKey
	// existingLabels are the existing nodes' labels, whose values are domains of every key.
	existingLabels []map[string]string
	provisioners   []*provisioner
	volumes        *volumeIndex
	// room indexes the nodes opened in the pass by their room.
	room *roomIndex
	// growableScratch is placeOnNewNodes' scratch list of the open nodes a pod could grow.
	growableScratch []*node
	// growth finds the cheapest growth among every node opened in the pass.
	growth *growthIndex
	// volumeDrivers are the CSI drivers whose volumes pods attach, by resource index.
	volumeDrivers map[string]int
	nodes         []*node // existing nodes first, then new ones in the order they were opened
	existing      int
	results       *Results
	// bound are the placed pods in the order of results.Bindings.
	bound []*podInfo
	// domainCache caches, by rendered requirements and what else decides a group's domains,
	// the domains a pod with those requirements could be in.
	domainCache map[domainsCacheKey]domainSet
	// narrowed holds candidate lists narrowed to zone and capacity type masks.
	narrowed map[narrowedKey]*narrowedList
	// ownKey and setKey are ownList's scratch keys.
	ownKey, setKey []byte
	// labelMatches are the groups matching each namespace and label set seen, by both.
	labelMatches map[string]*labelMatches
}

type provisioner struct {
	index        int
	key          pools.Key
	weight       int32
	requirements scheduling.Requirements
	// labels are those the provisioner sets itself (spec.labels, provisioner-name); fixedKeys
	// are their keys.
	labels    map[string]string
	fixedKeys sets.Set[string]
	// typeKeys are labels that come from the instance type or offering.
	typeKeys sets.Set[string]
	// chosenKeys are the keys the pool requires that neither its instance types nor its labels
	// give a value (upstream's "capacity-spread" pattern): the pool chooses each new node's
	// value among those its requirements allow, and the launch stamps it on the node.
	// chosenNext rotates, per key, the value of the nodes no pod pins to one.
	chosenKeys sets.Set[string]
	chosenNext map[string]int
	taints     []corev1.Taint
	// instanceTypes are those compatible with the requirements, cheapest first at prices.
	instanceTypes []*instanceType
	prices        []float64
	// roomPrice is the lowest price per milli-unit of cpu and of memory capacity among
	// instanceTypes, which no new node of the provisioner beats.
	roomPrice     [2]float64
	maxAlloc      resources
	zones         uint64
	capacityTypes uint64
	daemonSets    resources
	// daemonPorts are the host ports of the daemonsets that run on every new node;
	// typeDaemonPorts is whether some instance type has daemonPorts of its own.
	daemonPorts     []hostPort
	typeDaemonPorts bool
	// limit is the remaining capacity under spec.limits per resource, or nil without limits.
	limited   []bool
	remaining resources
	// minValues are the pool's, in key order; minValuesStrict is whether there are some and a
	// node that would keep fewer is refused (MinValuesStrict) rather than relaxed.
	minValues       []minValue
	minValuesStrict bool
}

// Schedule places the input's pending pods.
func Schedule(in Input) *Results { return newScheduler(in).plan(in) }

// plan places the pods one at a time (packPods), then improves the plan: shrink, and the batch
// packer if asked.
func (s *scheduler) plan(in Input) *Results {
	s.packPods(in)
	s.shrink()
	if in.Pack != nil {
		s.repack(in.Pack)
	}
	s.finish()
	return s.results
}

// pack places the pods one at a time, before shrink improves the plan.
func pack(in Input) *scheduler {
	s := newScheduler(in)
	s.packPods(in)
	return s
}

func newScheduler(in Input) *scheduler {
	return &scheduler{
		resources:     newResourceIndex(),
		zones:         newInterner(),
		capacityTypes: newInterner(),
		results:       &Results{},
		keyIndex:      map[string]*topologyKey{},
		domainCache:   map[domainsCacheKey]domainSet{},
		narrowed:      map[narrowedKey]*narrowedList{},
		labelMatches:  map[string]*labelMatches{},
		room:          newRoomIndex(),
		growth:        newGrowthIndex(),
		volumes:       newVolumeIndex(in),
	}
}

// packPods places the pods one at a time.
func (s *scheduler) packPods(in Input) {
	// The growth index serves this placement only: shrink and repack change nodes otherwise.
	defer func() { s.growth = nil }()
	pods := s.prepare(in)
	var failed []*podInfo
	for _, p := range pods {
		if p.err != nil {
			s.results.Unschedulable = append(s.results.Unschedulable, PodError{Pod: p.pod, Reason: p.err.Error()})
			continue
		}
		if reason := s.schedule(p); reason != "" {
			p.reason = reason
			failed = append(failed, p)
		}
	}
	// A pod whose affinity targets other pending pods may fail before they are placed; retry
	// while that makes progress.
	for progress := true; progress && len(failed) > 0; {
		progress = false
		var still []*podInfo
		for _, p := range failed {
			if reason := s.schedule(p); reason != "" {
				p.reason = reason
				still = append(still, p)
			} else {
				progress = true
			}
		}
		failed = still
	}
	for _, p := range failed {
		s.results.Unschedulable = append(s.results.Unschedulable, PodError{Pod: p.pod, Reason: p.reason})
	}
}

// schedule tries the pod's attempts in order of preference: on each, existing nodes first, then
// nodes already opened in this pass, then a new node.
func (s *scheduler) schedule(p *podInfo) string {
	var reasons []string
	for i := range p.attempts {
		a := &p.attempts[i]
		allowed, key := s.allowedDomains(p, a)
		if key != nil {
			reasons = append(reasons, fmt.Sprintf("no %s satisfies the pod's topology constraints", key.name))
			continue
		}
		for _, n := range s.nodes[:s.existing] {
			if n.fits(p.requests) && s.compatibleExisting(n, p, a, allowed) {
				s.place(n, p, nil)
				return ""
			}
		}
		if s.placeOnNewNodes(p, a, allowed) {
			return ""
		}
		reason := s.openNode(p, a, allowed)
		if reason == "" {
			return ""
		}
		reasons = append(reasons, reason)
	}
	return strings.Join(sets.List(sets.New(reasons...)), "; ")
}

// placeOnNewNodes puts the pod on a node opened earlier in the pass: preferably one whose
// cheapest instance type already has room for it, so it costs nothing more, the one it fits
// tightest; otherwise the one whose growth to a larger instance type costs least (the roomiest
// after growth on a tie), unless a new node for the pod costs less than the growth. Growth
// alone would pile a group that must share a zone onto one node of the largest (and, on real
// catalogues, dearest per core) type, where many small ones cost less. The room index keeps
// both searches to a few nodes, the tightest with room and the roomiest to grow, except where
// a new node may be cheaper than the growth found: then every node that could grow is weighed.
// Ties go to the node opened first, whichever order the nodes were visited in.
func (s *scheduler) placeOnNewNodes(p *podInfo, a *attempt, allowed []domainSet) bool {
	if s.keptFromEveryNewNode(p, a) {
		return false
	}
	if best := s.bestFit(p, a, allowed); best != nil {
		if nw, refusal := s.constrain(best, p, a, allowed); refusal == "" {
			s.place(best, p, nw)
			return true
		}
		// The best fit's topology refused the pod; take the first with room that accepts it.
		var accepting *node
		var accepted *narrowing
		s.room.withRoomFor(p.requests, func(n *node) bool {
			if n == best || !fitsWith(n.candidates[n.first].alloc, n.used, p.requests) || !s.compatibleNew(n, p, a, allowed) {
				return true
			}
			if nw, refusal := s.constrain(n, p, a, allowed); refusal == "" {
				accepting, accepted = n, nw
				return false
			}
			return true
		})
		if accepting != nil {
			s.place(accepting, p, accepted)
			return true
		}
	}
	growable := s.growable(p, a, allowed, fitCandidates)
	grow, nw := s.acceptingGrowth(cheapestGrowth(growable, p.requests), p, a, allowed)
	if grow == nil {
		return false
	}
	from, grown := grow.candidates[grow.first], nw.candidates[nw.first]
	growth := nw.prices[nw.first] - grow.prices[grow.first]
	if growth > 0 && s.newNodeMayBeCheaper(from, grown, growth, p.requests) {
		// Where prices are not linear in size, the roomiest nodes need not be those cheapest to
		// grow, and a growth missed is a node opened: weigh every node that could grow.
		if len(growable) == fitCandidates {
			grow, nw = s.acceptingGrowth(s.cheapestGrowthOfAll(p, a, allowed), p, a, allowed)
			from, grown = grow.candidates[grow.first], nw.candidates[nw.first]
			growth = nw.prices[nw.first] - grow.prices[grow.first]
		}
		if fresh, freshNarrowing, _ := s.newNodeFor(p, a, allowed); fresh != nil &&
			cheaperThanGrowth(freshNarrowing, from, grown, growth, p.requests) {
			s.open(fresh, p, freshNarrowing)
			return true
		}
	}
	s.place(grow, p, nw)
	return true
}

// acceptingGrowth is grow, the node whose growth for the pod costs least, and the narrowing
// that grows it; if that node refuses the pod (e.g. a limit), the first open node that could
// grow and accepts it; nil for none.
func (s *scheduler) acceptingGrowth(grow *node, p *podInfo, a *attempt, allowed []domainSet) (*node, *narrowing) {
	if grow == nil {
		return nil, nil
	}
	if nw, refusal := s.constrain(grow, p, a, allowed); refusal == "" {
		return grow, nw
	}
	for _, n := range s.nodes[s.existing:] {
		if n == grow || !fitsWith(n.maxAlloc, n.used, p.requests) || !s.compatibleNew(n, p, a, allowed) {
			continue
		}
		if nw, refusal := s.constrain(n, p, a, allowed); refusal == "" {
			return n, nw
		}
	}
	return nil, nil
}

// keptFromEveryNewNode reports whether a hostname term keeps the pod off every node opened in
// the pass: its own anti-affinity, or another's that it matches, with a pod on each of them.
// Then no node need be looked at, which spares a pass that opens a node per pod of such a set
// from looking at all the others for each.
func (s *scheduler) keptFromEveryNewNode(p *podInfo, a *attempt) bool {
	open := len(s.nodes) - s.existing
	for _, t := range p.hostAntiAffinities {
		if (!t.soft || a.soft) && t.group.newNodesCounted == open {
			return true
		}
	}
	for _, g := range p.matchesHostAnti {
		if g.newNodesOwned == open {
			return true
		}
	}
	return false
}

// bestFit is, of the first fitCandidates nodes opened in the pass whose cheapest instance type
// has room for the pod and that accept it, least cpu room first, the one the pod fits tightest
// by fitScore (the one opened first on a tie); nil for none.
func (s *scheduler) bestFit(p *podInfo, a *attempt, allowed []domainSet) *node {
	var best *node
	bestScore := math.Inf(-1)
	found := 0
	s.room.withRoomFor(p.requests, func(n *node) bool {
		if !fitsWith(n.candidates[n.first].alloc, n.used, p.requests) || !s.compatibleNew(n, p, a, allowed) {
			return true
		}
		if score := fitScore(n, p.requests); score > bestScore || (score == bestScore && n.seq < best.seq) {
			best, bestScore = n, score
		}
		found++
		return found < fitCandidates
	})
	return best
}

// growable are the first limit nodes opened in the pass, most cpu room first, that accept the
// pod and could grow to hold it, in s.growableScratch.
// Without a limit the order does not matter, and the nodes are walked in opening order, which
// is cheaper than the index.
func (s *scheduler) growable(p *podInfo, a *attempt, allowed []domainSet, limit int) []*node {
	growable := s.growableScratch[:0]
	visit := func(n *node) bool {
		if fitsWith(n.maxAlloc, n.used, p.requests) && !fitsWith(n.candidates[n.first].alloc, n.used, p.requests) && s.compatibleNew(n, p, a, allowed) {
			growable = append(growable, n)
		}
		return len(growable) < limit
	}
	if limit == math.MaxInt {
		for _, n := range s.nodes[s.existing:] {
			visit(n)
		}
	} else {
		s.room.roomiestFirst(visit)
	}
	s.growableScratch = growable
	return growable
}

// cheapestGrowth is the node whose growth for requests costs least, the roomiest after growth
// on a tie, then the one opened first; nil for none. A node none of whose dearer types holds
// the pod (its cheaper ones, which may, take the pool over its limits) cannot grow.
func cheapestGrowth(nodes []*node, requests resources) *node {
	var grow *node
	growth, room := math.Inf(1), math.Inf(-1)
	for _, n := range nodes {
		g, r := growthPrice(n, requests)
		if math.IsInf(g, 1) {
			continue
		}
		if g < growth || (g == growth && (r > room || (r == room && n.seq < grow.seq))) {
			grow, growth, room = n, g, r
		}
	}
	return grow
}

// growthPrice is what growing node n to the cheapest of its instance types with room for
// requests more costs (+Inf if none has room), and the room that type would leave in cpu and
// memory, as fractions of its allocatable: at the same price, more room for later pods is
// better.
func growthPrice(n *node, requests resources) (float64, float64) {
	for i := n.first + 1; i < len(n.candidates); i++ {
		if t := n.candidates[i]; fitsWith(t.alloc, n.used, requests) {
			var room float64
			for _, d := range []int{0, 1} { // cpu and memory, as newResourceIndex places them
				if t.alloc[d] > 0 {
					room += float64(t.alloc[d]-n.used[d]-requests[d]) / float64(t.alloc[d])
				}
			}
			return n.prices[i] - n.prices[n.first], room
		}
	}
	return math.Inf(1), math.Inf(-1)
}

// fitScore ranks the nodes whose cheapest instance type has room for a pod: the higher, the
// less room in cpu and memory (as fractions of allocatable) the pod leaves, so that pods fill
// nodes tightly (best fit) and keep the roomy ones for the pods that need them, and the more
// evenly it leaves them used. The second term is kube-scheduler's NodeResourcesBalancedAllocation
// (the standard deviation of the used fractions, here of two): room left in one resource only
// is room no pod of the workload's usual shape can take, and a node full in memory with cores
// to spare launches larger than its cpu needs. It moves the benchmark plans by about 0.3 %
// (docs/benchmarks.md).
func fitScore(n *node, requests resources) float64 {
	t := n.candidates[n.first]
	var score float64
	var left [2]float64
	for d := range left { // cpu and memory, as newResourceIndex places them
		if c := float64(t.alloc[d]); c > 0 {
			left[d] = float64(t.alloc[d]-n.used[d]-requests[d]) / c
			score -= left[d]
		}
	}
	return score - math.Abs(left[0]-left[1])/2
}

// cheaperThanGrowth reports whether a new node buys room for pods shaped like requests at a
// lower price per pod than growing a node from instance type from to grown, for growth more,
// does. Comparing price per unit of room, not the growth's price against the new node's, keeps
// growth where the catalogue's price is linear in size: the room a growth buys beyond this pod
// fills with later pods at no further cost.
func cheaperThanGrowth(fresh *narrowing, from, grown *instanceType, growth float64, requests resources) bool {
	freshRoom := podsRoom(fresh.candidates[fresh.first], requests)
	if math.IsInf(freshRoom, 1) {
		return false
	}
	room := podsRoom(grown, requests) - podsRoom(from, requests)
	if room <= 0 {
		return true
	}
	// The tolerance keeps ties (a linear catalogue) from turning on rounding.
	return fresh.prices[fresh.first]/freshRoom < growth/room*(1-1e-9)
}

// newNodeMayBeCheaper is cheaperThanGrowth against the least any provisioner's new node could
// charge per pod, which spares searching the instance types for a new node where growth is
// surely no dearer, as on a catalogue priced linearly in size.
func (s *scheduler) newNodeMayBeCheaper(from, grown *instanceType, growth float64, requests resources) bool {
	room := podsRoom(grown, requests) - podsRoom(from, requests)
	if room <= 0 {
		return true
	}
	for _, prov := range s.provisioners {
		// A type holding r pods costs at least r × requests × the lowest price per unit.
		var floor float64
		for d, price := range prov.roomPrice {
			floor = math.Max(floor, float64(requests[d])*price)
		}
		if floor < growth/room*(1-1e-9) {
			return true
		}
	}
	return false
}

// podsRoom is how many pods shaped like requests an instance type holds, fractionally: by cpu
// and memory capacity, and by the allocatable of other resources (extended ones, volume
// attachments) that the pods request and the type limits; +Inf for a pod that requests none,
// which growth never has to make room for.
func podsRoom(t *instanceType, requests resources) float64 {
	room := math.Inf(1)
	for i, r := range requests {
		if r <= 0 {
			continue
		}
		switch i {
		case 0, 1: // cpu and memory, as newResourceIndex places them
			room = math.Min(room, float64(t.capacity[i])/float64(r))
		case 2: // pods: every pod takes one, and cpu or memory bind first on all but tiny pods
		default:
			if t.alloc[i] < unlimitedVolumes {
				room = math.Min(room, float64(t.alloc[i])/float64(r))
			}
		}
	}
	return room
}

// openNode launches a node for the pod from the provisioner whose cheapest fitting instance
// type is cheapest.
func (s *scheduler) openNode(p *podInfo, a *attempt, allowed []domainSet) string {
	n, nw, reason := s.newNodeFor(p, a, allowed)
	if n == nil {
		return reason
	}
	s.open(n, p, nw)
	return ""
}

// newNodeFor is the cheapest new node the pod could go on, from any provisioner, without
// opening it; or why there is none.
func (s *scheduler) newNodeFor(p *podInfo, a *attempt, allowed []domainSet) (*node, *narrowing, string) {
	var best *node
	var bestNarrowing *narrowing
	var reasons []string
	for _, prov := range s.provisioners {
		if best != nil && prov.weight < best.prov.weight {
			break // the pools are in descending weight: a lighter one never takes the pod
		}
		if scheduling.UntoleratedTaint(p.pod.Spec.Tolerations, prov.taints) != nil {
			reasons = append(reasons, fmt.Sprintf("%s: pod does not tolerate its taints", prov.key))
			continue
		}
		n := s.emptyNode(prov)
		if portsConflict(n.ports, p.hostPorts) {
			reasons = append(reasons, fmt.Sprintf("%s: %s", prov.key, daemonPortRefusal))
			continue
		}
		if !s.topologyAllowsNode(n, p, a) {
			reasons = append(reasons, "no new node satisfies the pod's hostname topology constraints")
			continue
		}
		nw, refusal := s.constrain(n, p, a, allowed)
		if refusal != "" {
			reasons = append(reasons, fmt.Sprintf("%s: %s", prov.key, refusal))
			continue
		}
		if best == nil || nw.prices[nw.first] < bestNarrowing.prices[bestNarrowing.first] {
			best, bestNarrowing = n, nw
		}
	}
	if best == nil {
		if len(reasons) == 0 {
			return nil, nil, "no provisioner"
		}
		return nil, nil, strings.Join(reasons, "; ")
	}
	return best, bestNarrowing, ""
}

// open adds new node n to the plan with pod p on it.
func (s *scheduler) open(n *node, p *podInfo, nw *narrowing) {
	n.seq = len(s.nodes) - s.existing
	n.opened = len(s.results.Bindings)
	n.hostname = fmt.Sprintf("karpenter-new-node-%d", n.seq)
	s.nodes = append(s.nodes, n)
	s.place(n, p, nw)
	s.room.insert(n)
	n.indexed = true
}

func (s *scheduler) emptyNode(prov *provisioner) *node {
	return &node{
		prov:         prov,
		taints:       prov.taints,
		requirements: prov.requirements,
		used:         append(resources(nil), prov.daemonSets...),
		// Clipped, a pod's ports appended go to a node's own copy.
		ports:         slices.Clip(prov.daemonPorts),
		candidates:    prov.instanceTypes,
		prices:        prov.prices,
		maxAlloc:      prov.maxAlloc,
		zones:         prov.zones,
		capacityTypes: prov.capacityTypes,
		domain:        s.unknownDomains(),
		counts:        make([]int32, len(s.topology.all)),
		owners:        make([]int32, len(s.topology.all)),
	}
}

func (prov *provisioner) commit(old, new *instanceType) {
	if prov.remaining == nil {
		return
	}
	prov.remaining.sub(new.capacity)
	if old != nil {
		prov.remaining.add(old.capacity)
	}
}

// withinLimits reports whether replacing old by new on a node keeps the provisioner within its
// limits.
func (prov *provisioner) withinLimits(old, new *instanceType) bool {
	if prov.remaining == nil {
		return true
	}
	for i, limited := range prov.limited {
		if !limited {
			continue
		}
		delta := new.capacity[i]
		if old != nil {
			delta -= old.capacity[i]
		}
		if delta > prov.remaining[i] {
			return false
		}
	}
	return true
}

// finish renders the new nodes, dropping instance types that would break a provisioner's limits
// if the cloud launched them instead of the cheapest. Nodes whose every candidate from the
// cheapest on fits, within the limits, share the rendered list of their candidates.
func (s *scheduler) finish() {
	rendered := map[**instanceType][]*cloudprovider.InstanceType{}
	// Nodes of one shape end with the same suffix of the same list: its bounds tell at once
	// whether every type in it is an option, without visiting each type for each node.
	bounds := map[suffixKey]typeBounds{}
	for _, n := range s.nodes[s.existing:] {
		requirements, labels := n.prov.chooseLabels(n.requirements)
		out := &NewNode{
			Hostname:     n.hostname,
			Pool:         n.prov.key,
			Requirements: requirements.NodeSelectorRequirements(),
			Labels:       labels,
			Taints:       n.prov.taints,
			Price:        n.prices[n.first],
			Pods:         n.pods,
			alloc:        n.candidates[n.first].alloc,
			used:         n.used,
			index:        s.resources,
		}
		candidates := n.candidates[n.first:]
		key := suffixKey{list: &n.candidates[0], length: len(n.candidates), first: n.first}
		b, ok := bounds[key]
		if !ok {
			b = boundsOf(candidates)
			bounds[key] = b
		}
		if within(b.minAlloc, n.used) && n.prov.withinLimits(n.cheapest, &instanceType{capacity: b.maxCapacity}) {
			// The lists are never written once built: a suffix's first element names it.
			list, ok := rendered[&candidates[0]]
			if !ok {
				list = make([]*cloudprovider.InstanceType, len(candidates))
				for i, t := range candidates {
					list[i] = t.it
				}
				rendered[&candidates[0]] = list
			}
			out.InstanceTypes = list
		} else {
			// An instance type the node outgrew, or one the limits leave no room to grow into,
			// is no option.
			out.InstanceTypes = make([]*cloudprovider.InstanceType, 0, len(candidates))
			for _, t := range candidates {
				if n.canLaunchAs(t) {
					out.InstanceTypes = append(out.InstanceTypes, t.it)
				}
			}
		}
		if len(n.prov.minValues) > 0 {
			unmet, _ := n.prov.unmetMinValues(candidates, n.zones, n.capacityTypes, n.canLaunchAs)
			out.MinValuesRelaxed = unmet != nil
		}
		s.results.NewNodes = append(s.results.NewNodes, out)
	}
}

// suffixKey names the candidates from first on of a list, by the address of the list's first
// element and its length.
type suffixKey struct {
	list          **instanceType
	length, first int
}

// typeBounds are, over some instance types, the least and the most allocatable and the largest
// capacity of each resource: a node within minAlloc fits in every type, and one whose type may
// grow to maxCapacity stays under the limits in every type.
type typeBounds struct {
	minAlloc, maxAlloc, maxCapacity resources
}

func boundsOf(types []*instanceType) typeBounds {
	b := typeBounds{minAlloc: slices.Clone(types[0].alloc), maxAlloc: slices.Clone(types[0].alloc), maxCapacity: slices.Clone(types[0].capacity)}
	for _, t := range types[1:] {
		for i := range b.minAlloc {
			b.minAlloc[i] = min(b.minAlloc[i], t.alloc[i])
			b.maxAlloc[i] = max(b.maxAlloc[i], t.alloc[i])
			b.maxCapacity[i] = max(b.maxCapacity[i], t.capacity[i])
		}
	}
	return b
}

// sortPods orders pods so the most constrained open nodes first and the rest fill them: pods
// that need a node of their own, then hostname-constrained, constrained on other topology keys,
// then the rest, and last those with preferred pod affinity only;
// largest first within each class.
func sortPods(pods []*podInfo) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.class != b.class {
			return a.class < b.class
		}
		if a.requests[0] != b.requests[0] {
			return a.requests[0] > b.requests[0]
		}
		return a.requests[1] > b.requests[1]
	})
}
