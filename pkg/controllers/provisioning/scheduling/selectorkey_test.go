package scheduling

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelectorKey: selectors that select alike may share a parse, those that do not never do.
func TestSelectorKey(t *testing.T) {
	in := func(key string, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
	}
	selectors := []*metav1.LabelSelector{
		nil,
		{},
		{MatchLabels: map[string]string{"app": "web"}},
		{MatchLabels: map[string]string{"app": "db"}},
		{MatchLabels: map[string]string{"app": "web", "tier": "a"}},
		{MatchLabels: map[string]string{"app": "web,tier=a"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web", "db")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web,db")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}},
	}
	seen := map[string]int{}
	for i, s := range selectors {
		key := selectorKey(s)
		if j, ok := seen[key]; ok {
			t.Errorf("selectors %d and %d share the key %q", j, i, key)
		}
		seen[key] = i
	}
	same := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a", "app": "web"}}
	if selectorKey(same) != selectorKey(selectors[4]) {
		t.Errorf("equal match labels keyed apart: %q, %q", selectorKey(same), selectorKey(selectors[4]))
	}
}
