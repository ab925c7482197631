package scheduling

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func requiredAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func term(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

func expr(key string, operator corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: operator, Values: values}
}

func TestCheckNodeAffinity(t *testing.T) {
	labels := map[string]string{"zone": "a", "group": "gpu", "generation": "5"}
	for _, tc := range []struct {
		name         string
		nodeSelector map[string]string
		affinity     *corev1.Affinity
		unfit        string // substring of the error; empty when the node fits
	}{
		{name: "no constraints"},
		{name: "matching nodeSelector", nodeSelector: map[string]string{"zone": "a", "group": "gpu"}},
		{name: "mismatched nodeSelector", nodeSelector: map[string]string{"zone": "b"}, unfit: "nodeSelector zone=b"},
		{name: "nodeSelector on an absent label", nodeSelector: map[string]string{"disk": "ssd"}, unfit: "nodeSelector disk=ssd"},
		{name: "first mismatch by key", nodeSelector: map[string]string{"zone": "b", "arch": "arm64"}, unfit: "nodeSelector arch=arm64"},
		{name: "affinity without terms matches nothing", affinity: requiredAffinity(), unfit: "affinity"},
		{name: "affinity In", affinity: requiredAffinity(term(expr("zone", corev1.NodeSelectorOpIn, "b", "a")))},
		{name: "terms are ORed", affinity: requiredAffinity(term(expr("zone", corev1.NodeSelectorOpIn, "b")), term(expr("group", corev1.NodeSelectorOpExists)))},
		{name: "expressions are ANDed", affinity: requiredAffinity(term(expr("zone", corev1.NodeSelectorOpIn, "a"), expr("group", corev1.NodeSelectorOpDoesNotExist))), unfit: "affinity"},
		{name: "NotIn on an absent label", affinity: requiredAffinity(term(expr("disk", corev1.NodeSelectorOpNotIn, "hdd")))},
		{name: "Gt", affinity: requiredAffinity(term(expr("generation", corev1.NodeSelectorOpGt, "4")))},
		{name: "Lt", affinity: requiredAffinity(term(expr("generation", corev1.NodeSelectorOpLt, "5"))), unfit: "affinity"},
		{name: "Gt on a word", affinity: requiredAffinity(term(expr("zone", corev1.NodeSelectorOpGt, "1"))), unfit: "affinity"},
		{name: "invalid term matches nothing", affinity: requiredAffinity(term(expr("generation", corev1.NodeSelectorOpGt, "four"))), unfit: "affinity"},
		{name: "empty term matches nothing", affinity: requiredAffinity(term()), unfit: "affinity"},
		{name: "matchFields matches nothing", affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "a")},
			MatchFields:      []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1")},
		}), unfit: "affinity"},
		{name: "a node name alone matches nothing", affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "node-1")},
		}), unfit: "affinity"},
		{name: "preferred affinity is not required", affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: term(expr("zone", corev1.NodeSelectorOpIn, "b"))}},
		}}},
		{name: "nodeSelector and affinity both hold", nodeSelector: map[string]string{"group": "gpu"}, affinity: requiredAffinity(term(expr("zone", corev1.NodeSelectorOpNotIn, "b")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: tc.nodeSelector, Affinity: tc.affinity}}
			err := CheckNodeAffinity(pod, labels)
			switch {
			case tc.unfit == "" && err != nil:
				t.Errorf("CheckNodeAffinity = %v, want nil", err)
			case tc.unfit != "" && (err == nil || !strings.Contains(err.Error(), tc.unfit)):
				t.Errorf("CheckNodeAffinity = %v, want an error containing %q", err, tc.unfit)
			}
		})
	}
}

func TestRequirementsFromTerms(t *testing.T) {
	empty := &corev1.NodeSelectorTerm{}
	if rs, err := RequirementsFromTerm(map[string]string{"zone": "a"}, empty); err != nil || len(rs) != 1 {
		t.Errorf("an empty preferred term = %v, %v; want the nodeSelector alone", rs, err)
	}
	if _, err := RequirementsFromRequiredTerm(nil, empty); !errors.Is(err, ErrEmptyTerm) {
		t.Errorf("an empty required term = %v, want ErrEmptyTerm", err)
	}
	if rs, err := RequirementsFromRequiredTerm(map[string]string{"zone": "a"}, nil); err != nil || len(rs) != 1 {
		t.Errorf("no required affinity = %v, %v; want the nodeSelector alone", rs, err)
	}
	fields := &corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1")}}
	if _, err := RequirementsFromTerm(nil, fields); err == nil || !strings.Contains(err.Error(), "matchFields") {
		t.Errorf("a matchFields term = %v, want an error about matchFields", err)
	}
	if _, err := RequirementsFromTerm(nil, &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("k", "Near", "x")}}); err == nil || !strings.Contains(err.Error(), `requirement on "k"`) {
		t.Errorf("an unknown operator = %v, want an error naming the key", err)
	}
}
