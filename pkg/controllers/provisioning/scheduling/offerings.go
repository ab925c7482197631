package scheduling

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// Offerings are every available offering of the new node's instance types that its
// requirements allow (zone, capacity type), cheapest first, so that a capacity error falls
// through to the next cheapest; equal prices keep the scheduler's order. The launch offers them
// to the cloud in this order; consolidation prices a replacement by them.
func (n *NewNode) Offerings() []cloudprovider.Candidate {
	requirements := scheduling.Requirements{}
	for _, r := range n.Requirements {
		// The scheduler rendered these from requirements it parsed; a key it could not
		// parse again allows nothing.
		if err := requirements.Add(r.Key, r.Operator, r.Values...); err != nil {
			return nil
		}
	}
	allows := func(key, value string) bool {
		r, ok := requirements[key]
		return !ok || r.Has(value)
	}
	var out []cloudprovider.Candidate
	for _, it := range n.InstanceTypes {
		for _, o := range it.Offerings {
			if o.Available && allows(corev1.LabelTopologyZone, o.Zone) && allows(v1alpha5.CapacityTypeLabelKey, o.CapacityType) {
				out = append(out, cloudprovider.Candidate{InstanceType: it, Offering: o})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b cloudprovider.Candidate) int { return cmp.Compare(a.Offering.Price, b.Offering.Price) })
	return out
}
