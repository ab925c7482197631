package scheduling

import (
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
