package scheduling

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// narrowCandidates fills out's instance types, cheapest first, with node n's that hold used and
// meet out's requirements (checking instance type labels only if typeKeys) in an available
// offering, and whose own daemonsets bind none of ports; false if none does.
func (s *scheduler) narrowCandidates(n *node, out *narrowing, used resources, typeKeys bool, ports []hostPort) bool {
	out.zones = s.zones.mask(out.requirements[corev1.LabelTopologyZone])
	out.capacityTypes = s.capacityTypes.mask(out.requirements[v1alpha5.CapacityTypeLabelKey])
	if !typeKeys {
		return s.narrowOfferings(n, out, used)
	}
	for _, t := range n.candidates[n.first:] {
		if !within(t.alloc, used) || !n.prov.compatibleType(t, out.requirements) || portsConflict(t.daemonPorts, ports) {
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
		return false
	}
	sort.Sort(byPrice{out})
	out.maxAlloc, out.zones = maxAllocatable(out.candidates), reachableZones(out.candidates, out.capacityTypes, out.zones)
	return true
}

// narrowOfferings is narrowCandidates where only the zones and capacity types narrowed, the
// common case (a spread or affinity pinning a zone). Pods of one shape narrow the same lists to
// the same masks again and again, so the narrowed list is kept per source list and masks, and
// shared by the nodes it holds (lists are never written once built).
func (s *scheduler) narrowOfferings(n *node, out *narrowing, used resources) bool {
	if len(n.candidates) == 0 {
		return false
	}
	key := narrowedKey{source: &n.candidates[0], length: len(n.candidates), zones: out.zones, capacityTypes: out.capacityTypes}
	list, ok := s.narrowed[key]
	if !ok {
		list = &narrowedList{suffixes: map[int]suffixBounds{}, own: map[string]*ownList{}, ownByUse: map[string]*ownList{}}
		for _, t := range n.candidates {
			if price := t.price(out.zones, out.capacityTypes); !math.IsInf(price, 1) {
				list.candidates = append(list.candidates, t)
				list.prices = append(list.prices, price)
			}
		}
		sort.Sort(byPrice{&narrowing{candidates: list.candidates, prices: list.prices}})
		s.narrowed[key] = list
	}
	first := slices.IndexFunc(list.candidates, func(t *instanceType) bool { return within(t.alloc, used) })
	if first < 0 {
		return false
	}
	suffix := list.candidates[first:]
	bounds, ok := list.suffixes[first]
	if !ok {
		bounds = suffixBounds{typeBounds: boundsOf(suffix), zones: reachableZones(suffix, out.capacityTypes, allZones)}
		list.suffixes[first] = bounds
	}
	if !within(bounds.minAlloc, used) {
		// Some larger type still lacks room in one resource: the types that hold used, a list
		// kept per the set of them, which the nodes of one shape and use share.
		own := s.ownList(list, first, used, out.capacityTypes)
		out.candidates, out.prices = own.candidates, own.prices
		out.maxAlloc, out.zones = own.maxAlloc, out.zones&own.zones
		return true
	}
	out.candidates, out.prices = suffix, list.prices[first:]
	out.maxAlloc, out.zones = bounds.maxAlloc, out.zones&bounds.zones
	return true
}

// ownList is, of list's types from first on, those that hold used, with their prices, the
// largest allocatable among them and the zones where they have an offering of capacityTypes
// (the list's own): built once per set of types, which it names by the set's bits. Finding the
// set reads every type from first on; the set found is also kept by first and used, which the
// nodes of one shape and use ask for again and again (97 % of the calls on the real
// catalogue's 5,000-pod workload).
func (s *scheduler) ownList(list *narrowedList, first int, used resources, capacityTypes uint64) *ownList {
	useKey := binary.AppendVarint(s.ownKey[:0], int64(first))
	for _, v := range used {
		useKey = binary.AppendVarint(useKey, v)
	}
	s.ownKey = useKey
	if own, ok := list.ownByUse[string(useKey)]; ok {
		return own
	}
	own := s.ownListOfSet(list, first, used, capacityTypes)
	list.ownByUse[string(useKey)] = own
	return own
}

// ownListOfSet is ownList, looked up by the set of types that hold used.
func (s *scheduler) ownListOfSet(list *narrowedList, first int, used resources, capacityTypes uint64) *ownList {
	suffix := list.candidates[first:]
	key := binary.AppendVarint(s.setKey[:0], int64(first))
	var bits byte
	for i, t := range suffix {
		if within(t.alloc, used) {
			bits |= 1 << (i % 8)
		}
		if i%8 == 7 || i == len(suffix)-1 {
			key, bits = append(key, bits), 0
		}
	}
	s.setKey = key
	if own, ok := list.own[string(key)]; ok {
		return own
	}
	own := &ownList{}
	for i, t := range suffix {
		if within(t.alloc, used) {
			own.candidates = append(own.candidates, t)
			own.prices = append(own.prices, list.prices[first+i])
		}
	}
	own.maxAlloc, own.zones = maxAllocatable(own.candidates), reachableZones(own.candidates, capacityTypes, allZones)
	list.own[string(key)] = own
	return own
}

// narrowedKey names a candidate list, by the address of its first element and its length,
// narrowed to zone and capacity type masks.
type narrowedKey struct {
	source               **instanceType
	length               int
	zones, capacityTypes uint64
}

// narrowedList is a candidate list narrowed to masks: the types with an available offering,
// cheapest first, and, per first type that fits, the bounds of the types from there on; and
// the lists of a node's own (ownList), by first type and set of types, and by first type and use.
type narrowedList struct {
	candidates []*instanceType
	prices     []float64
	suffixes   map[int]suffixBounds
	own        map[string]*ownList
	ownByUse   map[string]*ownList
}

// ownList is the part of a narrowedList that holds some use, which no bounds of a suffix
// describe.
type ownList struct {
	candidates []*instanceType
	prices     []float64
	maxAlloc   resources
	zones      uint64
}

type suffixBounds struct {
	typeBounds
	zones uint64
}

// reachableZones are those of zones where one of the types has an offering of the capacity
// types. It stops at the first types that reach them all: a node narrowed to its own list of
// hundreds of types (a real catalogue's) usually has them in its first few, and looking at every
// type's offerings for each pod placed was a tenth of a real-catalogue pass.
func reachableZones(types []*instanceType, capacityTypes, zones uint64) uint64 {
	var reachable uint64
	for _, t := range types {
		if reachable |= t.zones(capacityTypes) & zones; reachable == zones {
			break
		}
	}
	return reachable
}

// allZones is a zone mask holding every zone.
const allZones = ^uint64(0)

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
