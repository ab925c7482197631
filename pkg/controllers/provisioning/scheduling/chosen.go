package scheduling

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/scheduling"
)

// chosenKeys are the keys of prov's requirements whose value the pool chooses per node: no
// instance type of the pool carries the key, the pool's labels do not set it, the requirement
// needs the label present, and the key is in no domain whose labels Kubernetes, Karpenter or the
// cloud set (a requirement on one of those that no instance type meets stays unmet, as it must:
// no GPU count is stamped on a node without GPUs).
func chosenKeys(prov *provisioner) sets.Set[string] {
	keys := sets.New[string]()
	for k, r := range prov.requirements {
		if prov.typeKeys.Has(k) || prov.fixedKeys.Has(k) || k == corev1.LabelHostname || r.AllowsAbsent() || scheduling.ReservedLabelDomain(k) {
			continue
		}
		keys.Insert(k)
	}
	return keys
}

// chooseLabels gives a new node with requirements reqs a value of each key its pool chooses:
// the one its pods pinned it to, or else, among those reqs allows, the next in turn, so that the
// nodes no pod pins spread over the values as upstream's random choice spreads them. It returns
// the requirements narrowed to the values chosen, and those values as labels.
func (prov *provisioner) chooseLabels(reqs scheduling.Requirements) (scheduling.Requirements, map[string]string) {
	if len(prov.chosenKeys) == 0 {
		return reqs, nil
	}
	labels := make(map[string]string, len(prov.chosenKeys))
	narrowed := false
	for _, k := range slices.Sorted(maps.Keys(prov.chosenKeys)) {
		choices := reqs[k].Choices()
		if len(choices) == 0 {
			// The scheduler never opens such a node: its requirements are satisfiable.
			continue
		}
		v := choices[prov.chosenNext[k]%len(choices)]
		labels[k] = v
		if len(choices) == 1 && reqs[k].AllowsOneValue() {
			continue
		}
		prov.chosenNext[k]++
		if !narrowed {
			reqs, narrowed = reqs.Copy(), true
		}
		reqs[k], _ = scheduling.NewRequirement(corev1.NodeSelectorOpIn, v)
	}
	return reqs, labels
}
