package scheduling

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// requirement is the set of values a node label may take, with the semantics of node selector
// operators: a finite set (In, DoesNotExist), or the complement of a finite set (NotIn, Exists),
// optionally bounded for Gt/Lt, and whether the label may be absent altogether.
type requirement struct {
	// values is the allowed set, or the excluded set when complement is true.
	values      sets.Set[string]
	complement  bool
	greaterThan *int64
	lessThan    *int64
	allowAbsent bool
}

func newRequirement(operator corev1.NodeSelectorOperator, values ...string) (*requirement, error) {
	switch operator {
	case corev1.NodeSelectorOpIn:
		return &requirement{values: sets.New(values...)}, nil
	case corev1.NodeSelectorOpNotIn:
		return &requirement{values: sets.New(values...), complement: true, allowAbsent: true}, nil
	case corev1.NodeSelectorOpExists:
		return &requirement{values: sets.New[string](), complement: true}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return &requirement{values: sets.New[string](), allowAbsent: true}, nil
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(values) != 1 {
			return nil, fmt.Errorf("operator %s needs exactly one value, got %d", operator, len(values))
		}
		bound, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("operator %s needs an integer value, %w", operator, err)
		}
		r := &requirement{values: sets.New[string](), complement: true}
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

// has reports whether a label with this value satisfies the requirement.
func (r *requirement) has(value string) bool {
	if r.greaterThan != nil || r.lessThan != nil {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || (r.greaterThan != nil && n <= *r.greaterThan) || (r.lessThan != nil && n >= *r.lessThan) {
			return false
		}
	}
	return r.values.Has(value) != r.complement
}

// anyValue reports whether some present label value satisfies the requirement.
func (r *requirement) anyValue() bool {
	if !r.complement {
		for v := range r.values {
			if r.has(v) {
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

// satisfiable reports whether a node can meet the requirement at all.
func (r *requirement) satisfiable() bool { return r.allowAbsent || r.anyValue() }

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

func (r *requirement) intersect(o *requirement) *requirement {
	out := &requirement{
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
			if !out.has(v) {
				out.values.Delete(v)
			}
		}
	}
	return out
}

// subsetOf reports whether every label state allowed by r is allowed by o.
func (r *requirement) subsetOf(o *requirement) bool {
	if r.allowAbsent && !o.allowAbsent {
		return false
	}
	if !r.complement {
		for v := range r.values {
			if r.has(v) && !o.has(v) {
				return false
			}
		}
		return true
	}
	// r allows infinitely many values: only an unbounded-or-looser complement can contain it.
	if !o.complement {
		return !r.anyValue()
	}
	if o.greaterThan != nil && (r.greaterThan == nil || *r.greaterThan < *o.greaterThan) {
		return false
	}
	if o.lessThan != nil && (r.lessThan == nil || *r.lessThan > *o.lessThan) {
		return false
	}
	for v := range o.values {
		if r.has(v) {
			return false
		}
	}
	return true
}

// nodeSelectorRequirements renders the requirement as node selector requirements on key.
func (r *requirement) nodeSelectorRequirements(key string) []corev1.NodeSelectorRequirement {
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

// requirements constrain node labels by key; a key that is absent is unconstrained.
type requirements map[string]*requirement

func (rs requirements) add(key string, operator corev1.NodeSelectorOperator, values ...string) error {
	r, err := newRequirement(operator, values...)
	if err != nil {
		return fmt.Errorf("requirement on %q, %w", key, err)
	}
	if existing, ok := rs[key]; ok {
		r = existing.intersect(r)
	}
	rs[key] = r
	return nil
}

func (rs requirements) copy() requirements {
	out := make(requirements, len(rs))
	for k, v := range rs {
		out[k] = v
	}
	return out
}

// intersect returns the requirements both allow, and the first key that no node can satisfy.
func (rs requirements) intersect(o requirements) (requirements, string) {
	out := rs.copy()
	for k, r := range o {
		if existing, ok := out[k]; ok {
			r = existing.intersect(r)
		}
		if !r.satisfiable() {
			return nil, k
		}
		out[k] = r
	}
	return out, ""
}

// matchesLabels reports whether a node with these labels satisfies every requirement.
func (rs requirements) matchesLabels(labels map[string]string) bool {
	for k, r := range rs {
		if v, ok := labels[k]; ok {
			if !r.has(v) {
				return false
			}
		} else if !r.allowAbsent {
			return false
		}
	}
	return true
}

// nodeSelectorRequirements renders the requirements, sorted by key.
func (rs requirements) nodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []corev1.NodeSelectorRequirement
	for _, k := range keys {
		out = append(out, rs[k].nodeSelectorRequirements(k)...)
	}
	return out
}

// requirementsFromTerm combines a pod's nodeSelector with one term of its required node affinity.
func requirementsFromTerm(nodeSelector map[string]string, term *corev1.NodeSelectorTerm) (requirements, error) {
	rs := requirements{}
	for k, v := range nodeSelector {
		if err := rs.add(k, corev1.NodeSelectorOpIn, v); err != nil {
			return nil, err
		}
	}
	if term == nil {
		return rs, nil
	}
	if len(term.MatchFields) > 0 {
		return nil, fmt.Errorf("node affinity matchFields selects existing nodes by name; a new node cannot satisfy it")
	}
	for _, expr := range term.MatchExpressions {
		if err := rs.add(expr.Key, expr.Operator, expr.Values...); err != nil {
			return nil, err
		}
	}
	return rs, nil
}
