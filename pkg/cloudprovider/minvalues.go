package cloudprovider

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// LabelValue is the value of key a node launched as the candidate carries from it: its instance
// type's name or label, or its offering's zone or capacity type.
func (c Candidate) LabelValue(key string) (string, bool) {
	switch key {
	case corev1.LabelInstanceTypeStable:
		return c.InstanceType.Name, true
	case corev1.LabelTopologyZone:
		return c.Offering.Zone, true
	case v1alpha5.CapacityTypeLabelKey:
		return c.Offering.CapacityType, true
	}
	value, ok := c.InstanceType.Labels[key]
	return value, ok
}

// DistinctValues is how many distinct values of key the candidates give a node.
func DistinctValues(candidates []Candidate, key string) int {
	var seen []string
	for _, c := range candidates {
		if value, ok := c.LabelValue(key); ok && !slices.Contains(seen, value) {
			seen = append(seen, value)
		}
	}
	return len(seen)
}

// MinValuesUnmet is the first key, in key order, of which the candidates give fewer distinct
// values than minValues asks, and how many they give; "" when they give enough of every key.
func MinValuesUnmet(candidates []Candidate, minValues map[string]int) (string, int) {
	for _, key := range slices.Sorted(maps.Keys(minValues)) {
		if have := DistinctValues(candidates, key); have < minValues[key] {
			return key, have
		}
	}
	return "", 0
}
