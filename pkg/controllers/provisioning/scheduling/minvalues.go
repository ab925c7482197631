package scheduling

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// minValue is a pool's minValues for one key.
type minValue struct {
	key string
	min int
}

// minValuesOf are the pool's minValues in key order, so that a refusal names the same key
// every time.
func minValuesOf(p Pool) []minValue {
	out := make([]minValue, 0, len(p.MinValues))
	for _, key := range slices.Sorted(maps.Keys(p.MinValues)) {
		out = append(out, minValue{key: key, min: p.MinValues[key]})
	}
	return out
}

// unmetMinValues is the first of the provisioner's minValues that the types keep admits give
// fewer distinct values of, under the zone and capacity type masks, and how many they give;
// nil when they give enough of every key.
func (prov *provisioner) unmetMinValues(types []*instanceType, zones, capacityTypes uint64, keep func(*instanceType) bool) (*minValue, int) {
	for i := range prov.minValues {
		mv := &prov.minValues[i]
		if have := distinctValues(types, mv, zones, capacityTypes, keep); have < mv.min {
			return mv, have
		}
	}
	return nil, 0
}

// distinctValues counts the values of mv's key among the types keep admits, up to mv.min: more
// do not matter.
func distinctValues(types []*instanceType, mv *minValue, zones, capacityTypes uint64, keep func(*instanceType) bool) int {
	var mask uint64
	var seen []string
	for _, t := range types {
		if !keep(t) {
			continue
		}
		switch mv.key {
		case corev1.LabelTopologyZone:
			mask |= t.zones(capacityTypes) & zones
		case v1alpha5.CapacityTypeLabelKey:
			for _, o := range t.offerings {
				if zones&(1<<o.zone) != 0 {
					mask |= (1 << o.capacityType) & capacityTypes
				}
			}
		default:
			if value, ok := t.labels[mv.key]; ok && !slices.Contains(seen, value) {
				seen = append(seen, value)
			}
		}
		if have := len(seen) + bits.OnesCount64(mask); have >= mv.min {
			return have
		}
	}
	return len(seen) + bits.OnesCount64(mask)
}

// strictMinValuesRefusal says why new node n, narrowed to out to hold used, is refused under
// MinValuesStrict: its instance types would give too few values of a key; "" if not refused.
// Small enough to inline, it costs a pool without minValues, constrain's common case, no call.
func strictMinValuesRefusal(n *node, out *narrowing, used resources) string {
	if !n.prov.minValuesStrict {
		return ""
	}
	return minValuesShortfall(n, out, used)
}

// minValuesShortfall says which of the minValues of new node n, narrowed to out to hold used,
// its instance types fall short of; "" if none.
func minValuesShortfall(n *node, out *narrowing, used resources) string {
	// The node's options are the types from the cheapest on that hold its pods, as finish
	// renders them.
	keep := func(t *instanceType) bool { return within(t.alloc, used) && n.prov.withinLimits(n.cheapest, t) }
	unmet, have := n.prov.unmetMinValues(out.candidates[out.first:], out.zones, out.capacityTypes, keep)
	if unmet == nil {
		return ""
	}
	return fmt.Sprintf("its instance types would give %d distinct values of %s, fewer than its minValues %d (min-values-policy Strict)", have, unmet.key, unmet.min)
}
