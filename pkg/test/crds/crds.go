// Package crds reads the CustomResourceDefinitions `make generate` writes into config/crd, so
// that tests can check the generated schemas against the Go definitions they repeat, and builds
// the test-only kinds tests and harnesses scale.
package crds

import (
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Scalable is a namespaced kind of version v1 with spec.replicas, status.replicas and a scale
// subresource over them, all a HorizontalAutoscaler needs of a target; resource is its plural.
func Scalable(resource schema.GroupResource, kind string) *apiextensionsv1.CustomResourceDefinition {
	replicas := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: resource.String()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: resource.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: resource.Resource, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": replicas}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": replicas}},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
			}},
		},
	}
}

// SpecSchema is the schema of spec in the version named version of the CRD in the file at path,
// failing the test if the file cannot be read or decoded. It is empty when the CRD has no such
// version.
func SpecSchema(t testing.TB, path, version string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // G304: a CRD of the repository the test names.
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	var spec apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			spec = v.Schema.OpenAPIV3Schema.Properties["spec"]
		}
	}
	return spec
}
