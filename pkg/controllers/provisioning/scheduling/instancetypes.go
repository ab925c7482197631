package scheduling

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// instanceType is an InstanceType with what the inner loop needs precomputed.
type instanceType struct {
	it       *cloudprovider.InstanceType
	labels   map[string]string
	alloc    resources
	capacity resources
	// offerings are the available ones, with zone and capacity type interned as bit positions.
	offerings []offering
	// daemonPorts are the host ports of the daemonsets that run on this type of a
	// provisioner's nodes but not on every one (those are the provisioner's daemonPorts).
	daemonPorts []hostPort
}

type offering struct {
	zone, capacityType int
	price              float64
}

// price is that of the cheapest available offering within the zone and capacity type masks,
// or +Inf when there is none.
func (t *instanceType) price(zones, capacityTypes uint64) float64 {
	best := math.Inf(1)
	for _, o := range t.offerings {
		if zones&(1<<o.zone) != 0 && capacityTypes&(1<<o.capacityType) != 0 && o.price < best {
			best = o.price
		}
	}
	return best
}

// zones are those with an available offering of an allowed capacity type.
func (t *instanceType) zones(capacityTypes uint64) uint64 {
	var mask uint64
	for _, o := range t.offerings {
		if capacityTypes&(1<<o.capacityType) != 0 {
			mask |= 1 << o.zone
		}
	}
	return mask
}

// interner gives zones and capacity types bit positions in uint64 masks.
type interner struct {
	index map[string]int
	names []string
}

func newInterner() *interner { return &interner{index: map[string]int{}} }

func (in *interner) intern(name string) int {
	if i, ok := in.index[name]; ok {
		return i
	}
	in.index[name] = len(in.names)
	in.names = append(in.names, name)
	return len(in.names) - 1
}

func (in *interner) all() uint64 {
	if len(in.names) >= 64 {
		return math.MaxUint64
	}
	return 1<<len(in.names) - 1
}

// mask is the set of interned names a requirement allows; nil allows all.
func (in *interner) mask(r *scheduling.Requirement) uint64 {
	if r == nil {
		return in.all()
	}
	var mask uint64
	for i, name := range in.names {
		if r.Has(name) {
			mask |= 1 << i
		}
	}
	return mask
}

func (s *scheduler) newInstanceType(it *cloudprovider.InstanceType) *instanceType {
	labels := make(map[string]string, len(it.Labels)+1)
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[corev1.LabelInstanceTypeStable] = it.Name
	t := &instanceType{
		it:       it,
		labels:   labels,
		alloc:    s.resources.vector(it.Allocatable()),
		capacity: s.resources.vector(it.Capacity),
	}
	s.volumeLimits(t.alloc, it.VolumeLimits)
	// Every node counts one against a pool's node limit: a node of any type is one node.
	if i, ok := s.resources[v1.LimitNodes]; ok {
		t.capacity[i] = resourceOne.MilliValue()
	}
	for _, o := range it.Offerings {
		if !o.Available {
			continue
		}
		t.offerings = append(t.offerings, offering{zone: s.zones.intern(o.Zone), capacityType: s.capacityTypes.intern(o.CapacityType), price: o.Price})
	}
	return t
}
