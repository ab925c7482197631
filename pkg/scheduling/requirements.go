package scheduling

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Requirement is the set of values a node label may take, with the semantics of node selector
// operators: a finite set (In, DoesNotExist), or the complement of a finite set (NotIn, Exists),
// optionally bounded for Gt/Lt, and whether the label may be absent altogether.
type Requirement struct {
	// values is the allowed set, or the excluded set when complement is true.
	values      sets.Set[string]
	complement  bool
	greaterThan *int64
	lessThan    *int64
	allowAbsent bool
}

// Unsatisfiable is a requirement no node meets: the label must be present, with a value from
// an empty set.
func Unsatisfiable() *Requirement { return &Requirement{values: sets.New[string]()} }

// NewRequirement is the requirement a node selector operator with values asserts on one key.
func NewRequirement(operator corev1.NodeSelectorOperator, values ...string) (*Requirement, error) {
	switch operator {
	case corev1.NodeSelectorOpIn:
		return &Requirement{values: sets.New(values...)}, nil
	case corev1.NodeSelectorOpNotIn:
		return &Requirement{values: sets.New(values...), complement: true, allowAbsent: true}, nil
	case corev1.NodeSelectorOpExists:
		return &Requirement{values: sets.New[string](), complement: true}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return &Requirement{values: sets.New[string](), allowAbsent: true}, nil
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(values) != 1 {
			return nil, fmt.Errorf("operator %s needs exactly one value, got %d", operator, len(values))
		}
		bound, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("operator %s needs an integer value, %w", operator, err)
		}
		r := &Requirement{values: sets.New[string](), complement: true}
		if operator == corev1.NodeSelectorOpGt {
			r.greaterThan = &bound
		} else {
			r.lessThan = &bound
		}
		return r, nil
	default:
		return nil, fmt.Errorf("unknown operator %q", operator)
	}
}

// Has reports whether a label with this value satisfies the requirement.
func (r *Requirement) Has(value string) bool {
	if r.greaterThan != nil || r.lessThan != nil {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || (r.greaterThan != nil && n <= *r.greaterThan) || (r.lessThan != nil && n >= *r.lessThan) {
			return false
		}
	}
	return r.values.Has(value) != r.complement
}

// AnyValue reports whether some present label value satisfies the requirement.
func (r *Requirement) AnyValue() bool {
	if !r.complement {
		for v := range r.values {
			if r.Has(v) {
				return true
			}
		}
		return false
	}
	if r.greaterThan != nil && r.lessThan != nil {
		// Integers strictly between the bounds, less the excluded ones.
		gap := *r.lessThan - *r.greaterThan - 1
		return gap > int64(len(r.values))
	}
	return true
}

// AllowsAbsent reports whether a node without the label meets the requirement.
func (r *Requirement) AllowsAbsent() bool { return r.allowAbsent }

// AllowsUnknownValue reports whether the label may take a value not known in advance, such as
// a new node's hostname: the requirement excludes at most a finite set of values, with no
// numeric bound.
func (r *Requirement) AllowsUnknownValue() bool {
	return r.complement && r.greaterThan == nil && r.lessThan == nil
}

// AllowsOneValue reports whether exactly one value of the label meets the requirement.
func (r *Requirement) AllowsOneValue() bool {
	return !r.complement && r.values.Len() == 1
}

// Satisfiable reports whether a node can meet the requirement at all.
func (r *Requirement) Satisfiable() bool { return r.allowAbsent || r.AnyValue() }

// Choices are the values a label no instance type decides may be given to meet the
// requirement: the allowed values, sorted, when they are finite; otherwise the least
// non-negative integer it allows, as upstream chooses an integer for such a label. Nil when it
// allows no value.
func (r *Requirement) Choices() []string {
	if !r.complement {
		var out []string
		for _, v := range sets.List(r.values) {
			if r.Has(v) {
				out = append(out, v)
			}
		}
		return out
	}
	least := int64(0)
	if r.greaterThan != nil {
		least = max(least, *r.greaterThan+1)
	}
	// Each excluded value can push the least one up by one at most.
	for v := least; v <= least+int64(r.values.Len()); v++ {
		if value := strconv.FormatInt(v, 10); r.Has(value) {
			return []string{value}
		}
	}
	return nil
}

func maxBound(a, b *int64) *int64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func minBound(a, b *int64) *int64 {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// Intersect is the requirement that allows what both r and o allow.
func (r *Requirement) Intersect(o *Requirement) *Requirement {
	out := &Requirement{
		allowAbsent: r.allowAbsent && o.allowAbsent,
		greaterThan: maxBound(r.greaterThan, o.greaterThan),
		lessThan:    minBound(r.lessThan, o.lessThan),
	}
	switch {
	case !r.complement && !o.complement:
		out.values = r.values.Intersection(o.values)
	case !r.complement && o.complement:
		out.values = r.values.Difference(o.values)
	case r.complement && !o.complement:
		out.values = o.values.Difference(r.values)
	default:
		out.values = r.values.Union(o.values)
		out.complement = true
	}
	if !out.complement && (out.greaterThan != nil || out.lessThan != nil) {
		for v := range out.values {
			if !out.Has(v) {
				out.values.Delete(v)
			}
		}
	}
	return out
}

// SubsetOf reports whether every label state allowed by r is allowed by o.
func (r *Requirement) SubsetOf(o *Requirement) bool {
	if r.allowAbsent && !o.allowAbsent {
		return false
	}
	if !r.complement {
		for v := range r.values {
			if r.Has(v) && !o.Has(v) {
				return false
			}
		}
		return true
	}
	// r allows infinitely many values: only an unbounded-or-looser complement can contain it.
	if !o.complement {
		return !r.AnyValue()
	}
	if o.greaterThan != nil && (r.greaterThan == nil || *r.greaterThan < *o.greaterThan) {
		return false
	}
	if o.lessThan != nil && (r.lessThan == nil || *r.lessThan > *o.lessThan) {
		return false
	}
	for v := range o.values {
		if r.Has(v) {
			return false
		}
	}
	return true
}

// NodeSelectorRequirements renders the requirement as node selector requirements on key.
func (r *Requirement) NodeSelectorRequirements(key string) []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	if !r.complement {
		values := sets.List(r.values)
		if len(values) == 0 {
			return []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpDoesNotExist}}
		}
		return []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}
	}
	if r.values.Len() > 0 {
		out = append(out, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: sets.List(r.values)})
	}
	if r.greaterThan != nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(*r.greaterThan, 10)}})
	}
	if r.lessThan != nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(*r.lessThan, 10)}})
	}
	if !r.allowAbsent && r.greaterThan == nil && r.lessThan == nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpExists})
	}
	return out
}

// Requirements constrain node labels by key; a key that is absent is unconstrained.
type Requirements map[string]*Requirement

// Add intersects the requirements with what operator and values assert on key.
func (rs Requirements) Add(key string, operator corev1.NodeSelectorOperator, values ...string) error {
	r, err := NewRequirement(operator, values...)
	if err != nil {
		return fmt.Errorf("requirement on %q, %w", key, err)
	}
	if existing, ok := rs[key]; ok {
		r = existing.Intersect(r)
	}
	rs[key] = r
	return nil
}

// Copy returns requirements that can be changed without changing rs; the requirements they
// hold are shared, as they are never changed in place.
func (rs Requirements) Copy() Requirements {
	out := make(Requirements, len(rs))
	for k, v := range rs {
		out[k] = v
	}
	return out
}

// Intersect returns the requirements both allow, and the first key that no node can satisfy.
func (rs Requirements) Intersect(o Requirements) (Requirements, string) {
	out := rs.Copy()
	for k, r := range o {
		if existing, ok := out[k]; ok {
			r = existing.Intersect(r)
		}
		if !r.Satisfiable() {
			return nil, k
		}
		out[k] = r
	}
	return out, ""
}

// MatchesLabels reports whether a node with these labels satisfies every requirement.
func (rs Requirements) MatchesLabels(labels map[string]string) bool {
	for k, r := range rs {
		if v, ok := labels[k]; ok {
			if !r.Has(v) {
				return false
			}
		} else if !r.allowAbsent {
			return false
		}
	}
	return true
}

// NodeSelectorRequirements renders the requirements, sorted by key.
func (rs Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []corev1.NodeSelectorRequirement
	for _, k := range keys {
		out = append(out, rs[k].NodeSelectorRequirements(k)...)
	}
	return out
}

// Satisfiable reports whether some node can meet every requirement.
func (rs Requirements) Satisfiable() bool {
	for _, r := range rs {
		if !r.Satisfiable() {
			return false
		}
	}
	return true
}

// Implies reports whether every node meeting rs meets want.
func (rs Requirements) Implies(want Requirements) bool {
	for k, w := range want {
		r, ok := rs[k]
		if !ok || !r.SubsetOf(w) {
			return false
		}
	}
	return true
}
