package apis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// upstreamManifests is testdata/upstream-manifests.yaml, the index of testdata/upstream/.
type upstreamManifests struct {
	Repository string             `json:"repository"`
	Commit     string             `json:"commit"`
	Manifests  []upstreamManifest `json:"manifests"`
}

type upstreamManifest struct {
	File string `json:"file"`
	Note string `json:"note,omitempty"`
	// Refused are the documents the CRDs refuse, each with what the refusal must say.
	Refused []struct {
		Document int    `json:"document"`
		Message  string `json:"message"`
	} `json:"refused,omitempty"`
	// Unparsable says why the file is not YAML.
	Unparsable string `json:"unparsable,omitempty"`
}

// TestUpstreamManifests applies the Karpenter manifests of upstream's v1 documentation and
// examples, unchanged, with strict field validation: the complete ones are admitted and every
// field they set reads back, from the apiserver and through the Go types a controller reads
// and writes them with; the fragments and references upstream's own CRDs refuse are refused.
func TestUpstreamManifests(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	var index upstreamManifests
	data, err := os.ReadFile("testdata/upstream-manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &index); err != nil {
		t.Fatalf("reading testdata/upstream-manifests.yaml, %v", err)
	}
	checkIndexListsEveryFile(t, index)

	for _, m := range index.Manifests {
		t.Run(m.File, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/upstream", m.File)) //nolint:gosec // G304: test data the index names.
			if err != nil {
				t.Fatal(err)
			}
			documents, err := manifests.DecodeAll(bytes.NewReader(data))
			if m.Unparsable != "" {
				if err == nil {
					t.Errorf("parsed, want it not to (%s)", m.Unparsable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, document := range documents {
				refused := ""
				for _, r := range m.Refused {
					if r.Document == i {
						refused = r.Message
					}
				}
				if refused == "" {
					applyAndReadBack(t, env.Client, document)
					continue
				}
				err := env.Client.Create(context.Background(), document.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict"))
				if err == nil || !strings.Contains(err.Error(), refused) {
					t.Errorf("document %d (%s %s) answered with %v, want a refusal containing %q", i, document.GetKind(), document.GetName(), err, refused)
				}
			}
		})
	}
}

// TestEveryField applies upstream's references of every field of NodePool, EC2NodeClass and
// NodeOverlay, spec and status, their exclusive alternatives split between objects, and reads
// every field back; and checks that they, with the complete manifests of testdata/upstream, set
// every field the CRDs have, so that no field of the schema goes untested.
func TestEveryField(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	schemas := map[string]apiextensionsv1.JSONSchemaProps{}
	crds := []struct{ file, kind, version string }{
		{"karpenter.sh_nodepools.yaml", "NodePool", "v1"},
		{"karpenter.k8s.aws_ec2nodeclasses.yaml", "EC2NodeClass", "v1"},
		{"karpenter.sh_nodeoverlays.yaml", "NodeOverlay", "v1alpha1"},
	}
	for _, crd := range crds {
		schemas[crd.kind] = readSchema(t, filepath.Join("../../config/crd", crd.file), crd.version)
	}
	covered := map[string]bool{}
	cover := func(document *unstructured.Unstructured) {
		if schema, ok := schemas[document.GetKind()]; ok {
			for _, field := range []string{"spec", "status"} {
				coverPaths(document.GetKind()+"."+field, schema.Properties[field], document.Object[field], covered)
			}
		}
	}
	files, err := filepath.Glob("testdata/every-field/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in testdata/every-field (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, document := range manifests.DecodeFile(t, file) {
				applyAndReadBack(t, env.Client, document)
				cover(document)
			}
		})
	}
	var index upstreamManifests
	data, err := os.ReadFile("testdata/upstream-manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &index); err != nil {
		t.Fatal(err)
	}
	for _, m := range index.Manifests {
		if m.Unparsable != "" || len(m.Refused) > 0 {
			continue
		}
		for _, document := range manifests.DecodeFile(t, filepath.Join("testdata/upstream", m.File)) {
			cover(document)
		}
	}

	for _, crd := range crds {
		for _, path := range schemaPaths(crd.kind, schemas[crd.kind]) {
			if !covered[path] {
				t.Errorf("no manifest of testdata sets %s", path)
			}
		}
	}
}

// checkIndexListsEveryFile fails the test when a file of testdata/upstream is not in the index,
// or the index names a file that is not there.
func checkIndexListsEveryFile(t *testing.T, index upstreamManifests) {
	t.Helper()
	var listed, found []string
	for _, m := range index.Manifests {
		listed = append(listed, m.File)
	}
	err := filepath.WalkDir("testdata/upstream", func(path string, entry os.DirEntry, err error) error {
		if err == nil && !entry.IsDir() {
			found = append(found, strings.TrimPrefix(path, "testdata/upstream/"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(found)
	if !slices.Equal(listed, found) {
		t.Fatalf("testdata/upstream-manifests.yaml lists\n%v\ntestdata/upstream holds\n%v", listed, found)
	}
}

// applyAndReadBack creates the document with strict field validation, writes its status through
// the status subresource, and checks that every field it sets reads back from the apiserver as
// written and survives a controller's round trip through the Go types.
func applyAndReadBack(t *testing.T, c client.Client, document *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	object := document.DeepCopy()
	status, hasStatus := object.Object["status"]
	delete(object.Object, "status")
	if err := c.Create(ctx, object, client.FieldValidation("Strict")); err != nil {
		t.Errorf("%s %s was refused, %v", document.GetKind(), document.GetName(), err)
		return
	}
	t.Cleanup(func() {
		if err := c.Delete(ctx, object); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %s %s, %v", document.GetKind(), document.GetName(), err)
		}
	})
	if hasStatus {
		object.Object["status"] = status
		if err := c.Status().Update(ctx, object, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s %s: its status was refused, %v", document.GetKind(), document.GetName(), err)
			return
		}
	}

	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(document.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(document), stored); err != nil {
		t.Fatal(err)
	}
	if path, ok := admission.Contains(stored.Object, document.Object, ""); !ok {
		t.Errorf("%s %s reads back without what it set at %s", document.GetKind(), document.GetName(), path)
	}

	// What a controller reads and writes back: the object decoded into its Go type and encoded
	// again. Quantities and durations come back in Go's canonical form (1k for 1000, 8h0m0s for
	// 8h) and zero values may be omitted; nothing else may change.
	typed, err := c.Scheme().New(document.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(document), typed.(client.Object)); err != nil {
		t.Fatal(err)
	}
	encoded, err := json.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	var roundTrip map[string]any
	if err := json.Unmarshal(encoded, &roundTrip); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"metadata", "spec", "status"} {
		if path, ok := sameValues(stored.Object[field], roundTrip[field], field); !ok {
			t.Errorf("%s %s: %s changes through the Go types\nstored:  %v\nthrough: %v", document.GetKind(), document.GetName(), path, stored.Object[field], roundTrip[field])
		}
	}
}

// sameValues reports whether decoded holds every field of stored with an equal value, and if
// not the path of the first that differs: quantities and durations compare by value, and a
// field stored with its zero value may be absent.
func sameValues(stored, decoded any, at string) (string, bool) {
	switch s := stored.(type) {
	case nil:
		return "", true
	case map[string]any:
		d, _ := decoded.(map[string]any)
		for key, value := range s {
			if path, ok := sameValues(value, d[key], at+"."+key); !ok {
				return path, false
			}
		}
		return "", true
	case []any:
		d, _ := decoded.([]any)
		if len(s) == 0 && len(d) == 0 {
			return "", true
		}
		if len(d) != len(s) {
			return at, false
		}
		for i := range s {
			if path, ok := sameValues(s[i], d[i], fmt.Sprintf("%s[%d]", at, i)); !ok {
				return path, false
			}
		}
		return "", true
	}
	if decoded == nil {
		return at, reflect.ValueOf(stored).IsZero()
	}
	a, b := fmt.Sprint(stored), fmt.Sprint(decoded)
	if a == b {
		return "", true
	}
	if qa, err := resource.ParseQuantity(a); err == nil {
		if qb, err := resource.ParseQuantity(b); err == nil && qa.Cmp(qb) == 0 {
			return "", true
		}
	}
	if da, err := time.ParseDuration(a); err == nil {
		if db, err := time.ParseDuration(b); err == nil && da == db {
			return "", true
		}
	}
	return at, false
}

// readSchema is the schema of the version named version of the CRD in the file at path.
func readSchema(t *testing.T, path, version string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // G304: a CRD of config/crd.
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return *v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s has no version %s", path, version)
	return apiextensionsv1.JSONSchemaProps{}
}

// schemaPaths are the paths of the fields of spec and status the schema holds, down to its
// leaves: a list's items are [], a map's values {} (a leaf).
func schemaPaths(kind string, schema apiextensionsv1.JSONSchemaProps) []string {
	var paths []string
	var walk func(at string, s apiextensionsv1.JSONSchemaProps)
	walk = func(at string, s apiextensionsv1.JSONSchemaProps) {
		switch {
		case len(s.Properties) > 0:
			for name, property := range s.Properties {
				walk(at+"."+name, property)
			}
		case s.Items != nil && s.Items.Schema != nil:
			walk(at+"[]", *s.Items.Schema)
		case s.AdditionalProperties != nil:
			paths = append(paths, at+"{}")
		default:
			paths = append(paths, at)
		}
	}
	for _, field := range []string{"spec", "status"} {
		walk(kind+"."+field, schema.Properties[field])
	}
	slices.Sort(paths)
	return paths
}

// coverPaths adds to covered the paths, as schemaPaths names them, of the fields value sets.
func coverPaths(at string, s apiextensionsv1.JSONSchemaProps, value any, covered map[string]bool) {
	switch {
	case len(s.Properties) > 0:
		fields, _ := value.(map[string]any)
		for name, field := range fields {
			if property, ok := s.Properties[name]; ok {
				coverPaths(at+"."+name, property, field, covered)
			}
		}
	case s.Items != nil && s.Items.Schema != nil:
		items, _ := value.([]any)
		for _, item := range items {
			coverPaths(at+"[]", *s.Items.Schema, item, covered)
		}
	case s.AdditionalProperties != nil:
		if entries, _ := value.(map[string]any); len(entries) > 0 {
			covered[at+"{}"] = true
		}
	default:
		covered[at] = true
	}
}
