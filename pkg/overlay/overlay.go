// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to the instance types the
// scheduler plans with: their offerings' prices and the extended resources they offer. It is
// pure: the callers read the overlays and the instance types, and plan with what Apply returns.
//
// The rules are upstream Karpenter's (designs/node-overlay.md, "merge by weight"): an overlay
// applies to the offerings its requirements match; the overlays are taken by weight, highest
// first, equal weights by name in reverse alphabetical order; per offering the first overlay
// that sets a price (price or priceAdjustment, relative to the cloud's price) wins, and per
// instance type and resource the first that sets the resource wins. An overlay that would set
// what another of the same weight taken before it already set conflicts with it and is applied
// nowhere (fail open: scheduling goes on without it).
package overlay

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// Pool is the instance types one pool (a Provisioner or a NodePool) plans with, and the labels
// every node it launches carries whichever type it launches as (its spec.labels, its template's
// labels); overlays match its name as the karpenter.sh/nodepool label, whatever its kind.
type Pool struct {
	Key           pools.Key
	Labels        map[string]string
	InstanceTypes []*cloudprovider.InstanceType
}

// Outcome is what became of one NodeOverlay.
type Outcome struct {
	// Matched is true when some offering of some pool meets the overlay's requirements.
	Matched bool
	// ConflictsWith names the overlay of the same weight, taken before this one, that already
	// sets the price of an offering this one prices, or a resource this one sets on the same
	// instance type; the overlay is then applied nowhere.
	ConflictsWith string
	// Invalid says why the overlay cannot be read (a requirement or price the CRD would have
	// refused, as in manifests `kubectl karpenter plan` reads); it is then applied nowhere.
	Invalid error
}

// Applied is true when the overlay changes what its matched instance types are planned with.
func (o Outcome) Applied() bool { return o.Matched && o.ConflictsWith == "" && o.Invalid == nil }

// Apply returns the pools with the overlays applied, in the same order, and what became of each
// overlay by name. An instance type no overlay changes is returned as it is; one that is
// changed is a copy, so the cloud's cached instance types are never changed.
func Apply(pools []Pool, overlays []v1alpha1.NodeOverlay) ([]Pool, map[string]Outcome) {
	outcomes := make(map[string]Outcome, len(overlays))
	if len(overlays) == 0 {
		return pools, outcomes
	}
	changes := make([][]typeChanges, len(pools))
	for i, pool := range pools {
		changes[i] = make([]typeChanges, len(pool.InstanceTypes))
	}
	for _, o := range byPrecedence(overlays) {
		outcomes[o.name] = apply(pools, changes, o)
	}
	out := make([]Pool, len(pools))
	for i, pool := range pools {
		out[i] = pool
		out[i].InstanceTypes = make([]*cloudprovider.InstanceType, len(pool.InstanceTypes))
		for j, it := range pool.InstanceTypes {
			out[i].InstanceTypes[j] = changes[i][j].applyTo(it)
		}
	}
	return out, outcomes
}

// parsed is a NodeOverlay as Apply takes it.
type parsed struct {
	name         string
	weight       int32
	requirements scheduling.Requirements
	// price turns the cloud's price into the overlay's; nil when the overlay sets none.
	price    func(float64) float64
	capacity corev1.ResourceList
	invalid  error
}

// byPrecedence parses the overlays, in the order they take precedence: the highest weight
// first, equal weights by name in reverse alphabetical order, as upstream orders them.
func byPrecedence(overlays []v1alpha1.NodeOverlay) []parsed {
	out := make([]parsed, 0, len(overlays))
	for i := range overlays {
		out = append(out, parse(&overlays[i]))
	}
	slices.SortFunc(out, func(a, b parsed) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), strings.Compare(b.name, a.name))
	})
	return out
}

func parse(o *v1alpha1.NodeOverlay) parsed {
	p := parsed{name: o.Name, capacity: o.Spec.Capacity, requirements: scheduling.Requirements{}}
	if o.Spec.Weight != nil {
		p.weight = *o.Spec.Weight
	}
	for _, r := range o.Spec.Requirements {
		operator, values, err := nodeSelectorOperator(r)
		if err == nil {
			err = p.requirements.Add(r.Key, operator, values...)
		}
		if err != nil {
			p.invalid = fmt.Errorf("spec.requirements, %w", err)
			return p
		}
	}
	var err error
	switch {
	case o.Spec.Price != nil && o.Spec.PriceAdjustment != nil:
		err = fmt.Errorf("spec.price and spec.priceAdjustment are both set")
	case o.Spec.Price != nil:
		p.price, err = priceOf(*o.Spec.Price)
	case o.Spec.PriceAdjustment != nil:
		p.price, err = adjustmentOf(*o.Spec.PriceAdjustment)
	}
	p.invalid = err
	return p
}

// nodeSelectorOperator turns upstream's Gte and Lte, which node selectors lack, into Gt and Lt
// on the next integer.
func nodeSelectorOperator(r v1alpha1.NodeSelectorRequirement) (corev1.NodeSelectorOperator, []string, error) {
	if r.Operator != "Gte" && r.Operator != "Lte" {
		return r.Operator, r.Values, nil
	}
	if len(r.Values) != 1 {
		return "", nil, fmt.Errorf("operator %s on %q needs exactly one value, got %d", r.Operator, r.Key, len(r.Values))
	}
	bound, err := strconv.ParseInt(r.Values[0], 10, 64)
	if err != nil {
		return "", nil, fmt.Errorf("operator %s on %q needs an integer value, %w", r.Operator, r.Key, err)
	}
	if r.Operator == "Gte" {
		return corev1.NodeSelectorOpGt, []string{strconv.FormatInt(bound-1, 10)}, nil
	}
	return corev1.NodeSelectorOpLt, []string{strconv.FormatInt(bound+1, 10)}, nil
}

func priceOf(value string) (func(float64) float64, error) {
	price, err := strconv.ParseFloat(value, 64)
	if err != nil || price < 0 {
		return nil, fmt.Errorf("spec.price %q is not a price", value)
	}
	return func(float64) float64 { return price }, nil
}

// adjustmentOf reads "+0.5", "-0.25", "+10%" or "-15%"; an adjusted price is never below zero.
func adjustmentOf(value string) (func(float64) float64, error) {
	number, percent := strings.CutSuffix(value, "%")
	amount, err := strconv.ParseFloat(number, 64)
	if err != nil || (number[0] != '+' && number[0] != '-') {
		return nil, fmt.Errorf("spec.priceAdjustment %q is not a signed amount or percentage", value)
	}
	return func(price float64) float64 {
		if percent {
			price *= 1 + amount/100
		} else {
			price += amount
		}
		return max(price, 0)
	}, nil
}

// typeChanges are the overlays applied to one instance type of one pool: per offering, the
// one that sets its price; per resource, the one that sets it.
type typeChanges struct {
	prices   map[int]*parsed
	capacity map[corev1.ResourceName]*parsed
}

// applyTo is the instance type as the changes leave it: it itself when there are none.
func (c typeChanges) applyTo(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	if len(c.prices) == 0 && len(c.capacity) == 0 {
		return it
	}
	copied := *it
	if len(c.prices) > 0 {
		copied.Offerings = slices.Clone(it.Offerings)
		for i, o := range c.prices {
			copied.Offerings[i].Price = o.price(it.Offerings[i].Price)
		}
	}
	if len(c.capacity) > 0 {
		copied.Capacity = maps.Clone(it.Capacity)
		if copied.Capacity == nil {
			copied.Capacity = corev1.ResourceList{}
		}
		for name, o := range c.capacity {
			copied.Capacity[name] = o.capacity[name].DeepCopy()
		}
	}
	return &copied
}

// match is an instance type of a pool some of whose offerings an overlay matches.
type match struct {
	pool, instanceType int
	offerings          []int
}

// apply records what the overlay sets on the instance types it matches, unless it conflicts.
func apply(pools []Pool, changes [][]typeChanges, o parsed) Outcome {
	if o.invalid != nil {
		return Outcome{Invalid: o.invalid}
	}
	matches := matching(pools, o)
	if len(matches) == 0 {
		return Outcome{}
	}
	if other := conflict(changes, matches, &o); other != "" {
		return Outcome{Matched: true, ConflictsWith: other}
	}
	for _, m := range matches {
		c := &changes[m.pool][m.instanceType]
		if o.price != nil {
			for _, i := range m.offerings {
				if _, set := c.prices[i]; !set {
					c.prices = setting(c.prices, i, &o)
				}
			}
		}
		for name := range o.capacity {
			if _, set := c.capacity[name]; !set {
				c.capacity = setting(c.capacity, name, &o)
			}
		}
	}
	return Outcome{Matched: true}
}

func setting[K comparable](m map[K]*parsed, key K, o *parsed) map[K]*parsed {
	if m == nil {
		m = map[K]*parsed{}
	}
	m[key] = o
	return m
}

// conflict names an overlay of the same weight already applied that sets what o sets.
func conflict(changes [][]typeChanges, matches []match, o *parsed) string {
	for _, m := range matches {
		c := changes[m.pool][m.instanceType]
		if o.price != nil {
			for _, i := range m.offerings {
				if other, set := c.prices[i]; set && other.weight == o.weight {
					return other.name
				}
			}
		}
		for name := range o.capacity {
			if other, set := c.capacity[name]; set && other.weight == o.weight {
				return other.name
			}
		}
	}
	return ""
}

// matching are the instance types, and their offerings, whose labels meet the overlay's
// requirements: the pool's labels and name, the type's labels and name, and the offering's zone
// and capacity type.
func matching(pools []Pool, o parsed) []match {
	var out []match
	for i, pool := range pools {
		for j, it := range pool.InstanceTypes {
			labels := make(map[string]string, len(pool.Labels)+len(it.Labels)+4)
			maps.Copy(labels, pool.Labels)
			maps.Copy(labels, it.Labels)
			labels[v1.NodePoolLabelKey] = pool.Key.Name
			labels[corev1.LabelInstanceTypeStable] = it.Name
			m := match{pool: i, instanceType: j}
			for k, offering := range it.Offerings {
				labels[corev1.LabelTopologyZone] = offering.Zone
				labels[v1.CapacityTypeLabelKey] = offering.CapacityType
				if o.requirements.MatchesLabels(labels) {
					m.offerings = append(m.offerings, k)
				}
			}
			if len(m.offerings) > 0 {
				out = append(out, m)
			}
		}
	}
	return out
}
