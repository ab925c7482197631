package v1

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Core is the requirement as a node selector states it: Gte n is Gt n-1 and Lte n is Lt n+1
// on integer labels, the only ones those operators admit. A malformed value is left for the
// scheduler's requirements to refuse.
func (r NodeSelectorRequirementWithMinValues) Core() corev1.NodeSelectorRequirement {
	out := corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
	if r.Operator != NodeSelectorOpGte && r.Operator != NodeSelectorOpLte || len(r.Values) != 1 {
		return out
	}
	n, err := strconv.ParseInt(r.Values[0], 10, 64)
	if err != nil {
		return out
	}
	if r.Operator == NodeSelectorOpGte {
		return corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(n-1, 10)}}
	}
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(n+1, 10)}}
}
