// Package crds reads the CustomResourceDefinitions `make generate` writes into config/crd, so
// that tests can check the generated schemas against the Go definitions they repeat.
package crds

import (
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

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
