// Package admission runs tables of admission cases, kept as YAML test data, against a real
// kube-apiserver: each case changes the spec of a valid object and says whether the CRD's
// schema and CEL rules admit the result, what they default, and with which message they refuse.
//
// A file of cases is a YAML list of Case:
//
//   - name: budget with a schedule but no duration
//     spec: {disruption: {budgets: [{nodes: "10", schedule: "@daily"}]}}
//     refused: "'schedule' must be set with 'duration'"
//   - name: defaults
//     stored: {disruption: {consolidateAfter: 0s}}
//   - name: nodeClassRef.kind cannot change
//     update: {template: {spec: {nodeClassRef: {kind: Other}}}}
//     refused: nodeClassRef.kind is immutable
//
// spec is merged into the valid object's spec: maps key by key, a null removes the key, any
// other value (a list too) replaces. Every request is made with strict field validation, so an
// unknown field is refused rather than dropped.
package admission

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Case is one admission case.
type Case struct {
	// Name says what the case checks.
	Name string `json:"name"`
	// Spec is merged into the valid object's spec before it is created.
	Spec map[string]any `json:"spec,omitempty"`
	// Update, when set, is merged into the created object's spec and written as an update:
	// refused then applies to the update, and the create must be admitted.
	Update map[string]any `json:"update,omitempty"`
	// Refused is empty when the request must be admitted; otherwise the refusal must contain
	// it.
	Refused string `json:"refused,omitempty"`
	// Stored, for an admitted request, is what the stored spec must contain (defaults, most
	// often): maps key by key, lists element by element, null for a field that must be absent.
	Stored map[string]any `json:"stored,omitempty"`
}

// ReadCases reads a file of cases, failing the test on an unknown field or a case without a
// name.
func ReadCases(t testing.TB, path string) []Case {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // G304: test data the test names.
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("reading %s, %v", path, err)
	}
	names := map[string]bool{}
	for _, c := range cases {
		if c.Name == "" || names[c.Name] {
			t.Fatalf("%s: every case needs a name of its own, found %q twice or empty", path, c.Name)
		}
		names[c.Name] = true
	}
	return cases
}

// Run runs each case as a subtest: valid is a valid object of the kind (its name is replaced
// by one per case, so cases that create for real do not collide).
func Run(t *testing.T, c client.Client, valid *unstructured.Unstructured, cases []Case) {
	for i, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			object := valid.DeepCopy()
			object.SetName(fmt.Sprintf("%s-case-%d", valid.GetName(), i))
			object.Object["spec"] = Merge(object.Object["spec"], tc.Spec)
			if tc.Update != nil {
				runUpdate(t, c, object, tc)
				return
			}
			err := c.Create(context.Background(), object, client.DryRunAll, client.FieldValidation("Strict"))
			if checkRefusal(t, err, tc.Refused) && tc.Stored != nil {
				checkStored(t, object, tc.Stored)
			}
		})
	}
}

func runUpdate(t *testing.T, c client.Client, object *unstructured.Unstructured, tc Case) {
	ctx := context.Background()
	if err := c.Create(ctx, object, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("creating the object to update, %v", err)
	}
	t.Cleanup(func() {
		if err := c.Delete(ctx, object); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %s, %v", object.GetName(), err)
		}
	})
	object.Object["spec"] = Merge(object.Object["spec"], tc.Update)
	err := c.Update(ctx, object, client.DryRunAll, client.FieldValidation("Strict"))
	if checkRefusal(t, err, tc.Refused) && tc.Stored != nil {
		checkStored(t, object, tc.Stored)
	}
}

// checkRefusal reports a request admitted or refused against refused, and whether it was
// admitted as it should be.
func checkRefusal(t *testing.T, err error, refused string) bool {
	t.Helper()
	switch {
	case refused == "" && err != nil:
		t.Errorf("refused with\n  %v\nwant admitted", err)
	case refused != "" && err == nil:
		t.Errorf("admitted, want a refusal containing\n  %s", refused)
	case refused != "" && !strings.Contains(err.Error(), refused):
		t.Errorf("refused with\n  %v\nwant a message containing\n  %s", err, refused)
	}
	return refused == "" && err == nil
}

func checkStored(t *testing.T, object *unstructured.Unstructured, want map[string]any) {
	t.Helper()
	if path, ok := Contains(object.Object["spec"], want, "spec"); !ok {
		t.Errorf("stored spec %v\ndoes not hold %v: %s differs", object.Object["spec"], want, path)
	}
}

// Merge merges patch into base: maps key by key, a nil value removes the key, anything else
// replaces. base is modified and returned.
func Merge(base any, patch map[string]any) any {
	if patch == nil {
		return base
	}
	merged, ok := base.(map[string]any)
	if !ok || merged == nil {
		merged = map[string]any{}
	}
	for key, value := range patch {
		switch v := value.(type) {
		case nil:
			delete(merged, key)
		case map[string]any:
			merged[key] = Merge(merged[key], v)
		default:
			merged[key] = v
		}
	}
	return merged
}

// Contains reports whether got holds want, maps key by key and lists element by element (of
// the same length), a null in want standing for an absent field; if not, the path of the first
// difference under at.
func Contains(got, want any, at string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at, false
		}
		for key, value := range w {
			if path, ok := Contains(g[key], value, at+"."+key); !ok {
				return path, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return at, false
		}
		for i := range w {
			if path, ok := Contains(g[i], w[i], fmt.Sprintf("%s[%d]", at, i)); !ok {
				return path, false
			}
		}
		return "", true
	case nil:
		// A null in want means the field is absent.
		return at, got == nil
	default:
		// YAML and JSON numbers decode to different Go types; compare them as written.
		return at, got != nil && fmt.Sprint(got) == fmt.Sprint(want)
	}
}
