package scheduling

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func mustRequirement(t *testing.T, operator corev1.NodeSelectorOperator, values ...string) *Requirement {
	t.Helper()
	r, err := NewRequirement(operator, values...)
	if err != nil {
		t.Fatalf("NewRequirement(%s, %v), %v", operator, values, err)
	}
	return r
}

func TestNewRequirementRejects(t *testing.T) {
	for _, tc := range []struct {
		operator corev1.NodeSelectorOperator
		values   []string
		want     string
	}{
		{corev1.NodeSelectorOpGt, nil, "exactly one value"},
		{corev1.NodeSelectorOpLt, []string{"1", "2"}, "exactly one value"},
		{corev1.NodeSelectorOpGt, []string{"big"}, "integer"},
		{"Matches", []string{"a"}, "unknown operator"},
	} {
		if _, err := NewRequirement(tc.operator, tc.values...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRequirement(%s, %v) = %v, want an error containing %q", tc.operator, tc.values, err, tc.want)
		}
	}
	for _, operator := range Operators {
		values := []string{"1"}
		if operator == corev1.NodeSelectorOpExists || operator == corev1.NodeSelectorOpDoesNotExist {
			values = nil
		}
		if _, err := NewRequirement(operator, values...); err != nil {
			t.Errorf("NewRequirement(%s, %v), %v", operator, values, err)
		}
	}
}

// TestRequirementMatches checks each operator, and intersections of them, against present and
// absent labels.
func TestRequirementMatches(t *testing.T) {
	type expr struct {
		operator corev1.NodeSelectorOperator
		values   []string
	}
	for _, tc := range []struct {
		name   string
		exprs  []expr
		match  []string // values that satisfy
		reject []string // values that do not
		absent bool     // whether an absent label satisfies
	}{
		{"In", []expr{{corev1.NodeSelectorOpIn, []string{"a", "b"}}}, []string{"a", "b"}, []string{"c", ""}, false},
		{"NotIn", []expr{{corev1.NodeSelectorOpNotIn, []string{"a"}}}, []string{"b", ""}, []string{"a"}, true},
		{"Exists", []expr{{corev1.NodeSelectorOpExists, nil}}, []string{"a", ""}, nil, false},
		{"DoesNotExist", []expr{{corev1.NodeSelectorOpDoesNotExist, nil}}, nil, []string{"a", ""}, true},
		{"Gt", []expr{{corev1.NodeSelectorOpGt, []string{"4"}}}, []string{"5", "100"}, []string{"4", "-1", "five"}, false},
		{"Lt", []expr{{corev1.NodeSelectorOpLt, []string{"4"}}}, []string{"3", "-10"}, []string{"4", "x"}, false},
		{"Gt and Lt", []expr{{corev1.NodeSelectorOpGt, []string{"1"}}, {corev1.NodeSelectorOpLt, []string{"4"}}}, []string{"2", "3"}, []string{"1", "4"}, false},
		{"In and Gt", []expr{{corev1.NodeSelectorOpIn, []string{"1", "5", "x"}}, {corev1.NodeSelectorOpGt, []string{"2"}}}, []string{"5"}, []string{"1", "x", "6"}, false},
		{"In and NotIn", []expr{{corev1.NodeSelectorOpIn, []string{"a", "b"}}, {corev1.NodeSelectorOpNotIn, []string{"b"}}}, []string{"a"}, []string{"b", "c"}, false},
		{"NotIn and NotIn", []expr{{corev1.NodeSelectorOpNotIn, []string{"a"}}, {corev1.NodeSelectorOpNotIn, []string{"b"}}}, []string{"c"}, []string{"a", "b"}, true},
		{"NotIn and Exists", []expr{{corev1.NodeSelectorOpNotIn, []string{"a"}}, {corev1.NodeSelectorOpExists, nil}}, []string{"b"}, []string{"a"}, false},
		{"In and DoesNotExist", []expr{{corev1.NodeSelectorOpIn, []string{"a"}}, {corev1.NodeSelectorOpDoesNotExist, nil}}, nil, []string{"a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := Requirements{}
			for _, e := range tc.exprs {
				if err := rs.Add("k", e.operator, e.values...); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range tc.match {
				if !rs.MatchesLabels(map[string]string{"k": v}) {
					t.Errorf("k=%q does not match", v)
				}
			}
			for _, v := range tc.reject {
				if rs.MatchesLabels(map[string]string{"k": v}) {
					t.Errorf("k=%q matches", v)
				}
			}
			if got := rs.MatchesLabels(nil); got != tc.absent {
				t.Errorf("absent label matches = %v, want %v", got, tc.absent)
			}
			if got, want := rs.Satisfiable(), len(tc.match) > 0 || tc.absent; got != want {
				t.Errorf("Satisfiable = %v, want %v", got, want)
			}
		})
	}
}

func TestRequirementPredicates(t *testing.T) {
	for _, tc := range []struct {
		name                                   string
		requirement                            *Requirement
		absent, unknown, one, any, satisfiable bool
	}{
		{"In one", mustRequirement(t, corev1.NodeSelectorOpIn, "a"), false, false, true, true, true},
		{"In two", mustRequirement(t, corev1.NodeSelectorOpIn, "a", "b"), false, false, false, true, true},
		{"NotIn", mustRequirement(t, corev1.NodeSelectorOpNotIn, "a"), true, true, false, true, true},
		{"Exists", mustRequirement(t, corev1.NodeSelectorOpExists), false, true, false, true, true},
		{"DoesNotExist", mustRequirement(t, corev1.NodeSelectorOpDoesNotExist), true, false, false, false, true},
		{"Gt", mustRequirement(t, corev1.NodeSelectorOpGt, "1"), false, false, false, true, true},
		{"empty interval", mustRequirement(t, corev1.NodeSelectorOpGt, "1").Intersect(mustRequirement(t, corev1.NodeSelectorOpLt, "2")), false, false, false, false, false},
		{"Unsatisfiable", Unsatisfiable(), false, false, false, false, false},
	} {
		r := tc.requirement
		for _, check := range []struct {
			what      string
			got, want bool
		}{
			{"AllowsAbsent", r.AllowsAbsent(), tc.absent},
			{"AllowsUnknownValue", r.AllowsUnknownValue(), tc.unknown},
			{"AllowsOneValue", r.AllowsOneValue(), tc.one},
			{"AnyValue", r.AnyValue(), tc.any},
			{"Satisfiable", r.Satisfiable(), tc.satisfiable},
		} {
			if check.got != check.want {
				t.Errorf("%s: %s = %v, want %v", tc.name, check.what, check.got, check.want)
			}
		}
	}
}

func TestChoices(t *testing.T) {
	r := func(operator corev1.NodeSelectorOperator, values ...string) *Requirement {
		return mustRequirement(t, operator, values...)
	}
	for _, tc := range []struct {
		name        string
		requirement *Requirement
		want        []string
	}{
		{"In, sorted", r(corev1.NodeSelectorOpIn, "3", "1", "2"), []string{"1", "2", "3"}},
		{"In narrowed by NotIn", r(corev1.NodeSelectorOpIn, "1", "2").Intersect(r(corev1.NodeSelectorOpNotIn, "1")), []string{"2"}},
		{"In narrowed by Gt", r(corev1.NodeSelectorOpIn, "1", "5", "x").Intersect(r(corev1.NodeSelectorOpGt, "2")), []string{"5"}},
		{"Exists: the least integer", r(corev1.NodeSelectorOpExists), []string{"0"}},
		{"Exists but not 0 or 1", r(corev1.NodeSelectorOpExists).Intersect(r(corev1.NodeSelectorOpNotIn, "0", "1")), []string{"2"}},
		{"Gt", r(corev1.NodeSelectorOpGt, "4"), []string{"5"}},
		{"Gt negative", r(corev1.NodeSelectorOpGt, "-3"), []string{"0"}},
		{"between bounds, excluded", r(corev1.NodeSelectorOpGt, "1").Intersect(r(corev1.NodeSelectorOpLt, "4")).Intersect(r(corev1.NodeSelectorOpNotIn, "2")), []string{"3"}},
		{"empty interval", r(corev1.NodeSelectorOpGt, "1").Intersect(r(corev1.NodeSelectorOpLt, "2")), nil},
		{"DoesNotExist", r(corev1.NodeSelectorOpDoesNotExist), nil},
	} {
		if got := tc.requirement.Choices(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Choices() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReservedLabelDomain(t *testing.T) {
	for key, want := range map[string]bool{
		"capacity-spread":                      false,
		"example.com/capacity-spread":          false,
		"kubernetes.io/arch":                   true,
		"node.kubernetes.io/instance-type":     true,
		"topology.kubernetes.io/zone":          true,
		"karpenter.sh/capacity-type":           true,
		"karpenter.k8s.aws/instance-gpu-count": true,
		"topology.k8s.aws/zone-id":             true,
		"notkubernetes.io/x":                   false,
	} {
		if got := ReservedLabelDomain(key); got != want {
			t.Errorf("ReservedLabelDomain(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestSubsetOf(t *testing.T) {
	in := func(values ...string) *Requirement { return mustRequirement(t, corev1.NodeSelectorOpIn, values...) }
	notIn := func(values ...string) *Requirement { return mustRequirement(t, corev1.NodeSelectorOpNotIn, values...) }
	exists := mustRequirement(t, corev1.NodeSelectorOpExists)
	gt := func(v string) *Requirement { return mustRequirement(t, corev1.NodeSelectorOpGt, v) }
	for _, tc := range []struct {
		name string
		r, o *Requirement
		want bool
	}{
		{"In within In", in("a"), in("a", "b"), true},
		{"In beyond In", in("a", "c"), in("a", "b"), false},
		{"In within NotIn", in("a"), notIn("b"), true},
		{"In within Exists", in("a"), exists, true},
		{"Exists within In", exists, in("a"), false},
		{"NotIn within Exists: absent allowed", notIn("a"), exists, false},
		{"Exists within NotIn", exists, notIn("a"), false},
		{"NotIn within looser NotIn", notIn("a", "b"), notIn("a"), true},
		{"Gt within looser Gt", gt("5"), gt("3"), true},
		{"Gt within tighter Gt", gt("3"), gt("5"), false},
		{"Gt within Exists", gt("3"), exists, true},
	} {
		if got := tc.r.SubsetOf(tc.o); got != tc.want {
			t.Errorf("%s: SubsetOf = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodeSelectorRequirementsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		exprs []corev1.NodeSelectorRequirement
		want  string
	}{
		{"In", []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"b", "a"}}}, "k In [a b]"},
		{"NotIn", []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}, "k NotIn [a]"},
		{"Exists", []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpExists}}, "k Exists []"},
		{"DoesNotExist", []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpDoesNotExist}}, "k DoesNotExist []"},
		{"NotIn and Exists", []corev1.NodeSelectorRequirement{
			{Key: "k", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}},
			{Key: "k", Operator: corev1.NodeSelectorOpExists},
		}, "k NotIn [a]; k Exists []"},
		{"Gt and Lt, sorted by key", []corev1.NodeSelectorRequirement{
			{Key: "z", Operator: corev1.NodeSelectorOpLt, Values: []string{"9"}},
			{Key: "a", Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}},
		}, "a Gt [1]; z Lt [9]"},
	} {
		rs, err := RequirementsFromTerm(nil, &corev1.NodeSelectorTerm{MatchExpressions: tc.exprs})
		if err != nil {
			t.Fatal(err)
		}
		var rendered []string
		for _, r := range rs.NodeSelectorRequirements() {
			rendered = append(rendered, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
		}
		if got := strings.Join(rendered, "; "); got != tc.want {
			t.Errorf("%s: rendered %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRequirementsIntersectAndImply(t *testing.T) {
	zoneA, _ := RequirementsFromTerm(map[string]string{"zone": "a"}, nil)
	zoneAB, _ := RequirementsFromTerm(nil, &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}})
	zoneB, _ := RequirementsFromTerm(map[string]string{"zone": "b"}, nil)
	arch, _ := RequirementsFromTerm(map[string]string{"arch": "arm64"}, nil)

	if both, key := zoneAB.Intersect(zoneA); key != "" || !both.Implies(zoneA) || !both.Implies(zoneAB) {
		t.Errorf("In [a b] ∩ In [a] = %v (failed on %q), want In [a]", both, key)
	}
	if none, key := zoneA.Intersect(zoneB); none != nil || key != "zone" {
		t.Errorf("In [a] ∩ In [b] = %v, %q, want nil, zone", none, key)
	}
	combined, _ := zoneA.Intersect(arch)
	if !combined.Implies(arch) || arch.Implies(combined) || len(zoneA) != 1 {
		t.Errorf("intersection %v: implication wrong, or zoneA changed: %v", combined, zoneA)
	}
	if zoneAB.Implies(zoneA) {
		t.Error("In [a b] implies In [a]")
	}
}
