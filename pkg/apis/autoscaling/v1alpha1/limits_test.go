package v1alpha1_test

import (
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// TestCRDLimitsMatchGo fails when the markers that bound a HorizontalAutoscaler's metrics and
// queries disagree with the constants the webhook and the controller's flags use.
func TestCRDLimitsMatchGo(t *testing.T) {
	data, err := os.ReadFile("../../../../config/crd/autoscaling.karpenter.sh_horizontalautoscalers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	var spec apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.SchemeGroupVersion.Version {
			spec = v.Schema.OpenAPIV3Schema.Properties["spec"]
		}
	}
	metrics := spec.Properties["metrics"]
	if metrics.MaxItems == nil || *metrics.MaxItems != v1alpha1.MaxMetrics {
		t.Errorf("spec.metrics maxItems = %v, want v1alpha1.MaxMetrics %d", metrics.MaxItems, v1alpha1.MaxMetrics)
	}
	if metrics.Items == nil || metrics.Items.Schema == nil {
		t.Fatal("the CRD has no spec.metrics items schema")
	}
	query := metrics.Items.Schema.Properties["prometheus"].Properties["query"]
	if query.MaxLength == nil || *query.MaxLength != v1alpha1.MaxQueryLength {
		t.Errorf("spec.metrics[].prometheus.query maxLength = %v, want v1alpha1.MaxQueryLength %d", query.MaxLength, v1alpha1.MaxQueryLength)
	}
}
