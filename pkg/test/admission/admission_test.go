package admission_test

import (
	"reflect"
	"testing"

	"karpenter.sh/karpenter/pkg/test/admission"
)

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name        string
		base, patch map[string]any
		want        map[string]any
	}{
		{name: "nested maps merge key by key",
			base:  map[string]any{"template": map[string]any{"spec": map[string]any{"a": 1, "b": 2}}},
			patch: map[string]any{"template": map[string]any{"spec": map[string]any{"b": 3, "c": 4}}},
			want:  map[string]any{"template": map[string]any{"spec": map[string]any{"a": 1, "b": 3, "c": 4}}}},
		{name: "a null removes the key",
			base:  map[string]any{"a": 1, "b": 2},
			patch: map[string]any{"a": nil},
			want:  map[string]any{"b": 2}},
		{name: "a list replaces",
			base:  map[string]any{"a": []any{1, 2}},
			patch: map[string]any{"a": []any{3}},
			want:  map[string]any{"a": []any{3}}},
		{name: "a map patch creates what is missing",
			base:  map[string]any{},
			patch: map[string]any{"a": map[string]any{"b": 1}},
			want:  map[string]any{"a": map[string]any{"b": 1}}},
		{name: "no patch leaves the base",
			base: map[string]any{"a": 1},
			want: map[string]any{"a": 1}},
	} {
		if got := admission.Merge(tc.base, tc.patch); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: merged to %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want any
		path      string
		contained bool
	}{
		{name: "a subset of maps", got: map[string]any{"a": 1, "b": "x"}, want: map[string]any{"a": 1}, contained: true},
		{name: "numbers of different types", got: map[string]any{"a": int64(1)}, want: map[string]any{"a": float64(1)}, contained: true},
		{name: "a different value", got: map[string]any{"a": "x"}, want: map[string]any{"a": "y"}, path: "spec.a"},
		{name: "a missing field", got: map[string]any{}, want: map[string]any{"a": "y"}, path: "spec.a"},
		{name: "a null for a field that is absent", got: map[string]any{}, want: map[string]any{"a": nil}, contained: true},
		{name: "a null for a field that is set", got: map[string]any{"a": 1}, want: map[string]any{"a": nil}, path: "spec.a"},
		{name: "lists element by element", got: []any{map[string]any{"a": 1, "b": 2}}, want: []any{map[string]any{"a": 1}}, contained: true},
		{name: "lists of different lengths", got: []any{1, 2}, want: []any{1}, path: "spec"},
		{name: "a list element that differs", got: []any{1, 2}, want: []any{1, 3}, path: "spec[1]"},
	} {
		path, contained := admission.Contains(tc.got, tc.want, "spec")
		if contained != tc.contained || (!contained && path != tc.path) {
			t.Errorf("%s: Contains = %q, %t; want %q, %t", tc.name, path, contained, tc.path, tc.contained)
		}
	}
}
