package v1alpha1_test

import (
	"testing"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/crds"
)

// TestCRDLimitsMatchGo fails when the markers that bound a HorizontalAutoscaler's metrics and
// queries disagree with the constants the webhook and the controller's flags use.
func TestCRDLimitsMatchGo(t *testing.T) {
	spec := crds.SpecSchema(t, "../../../../config/crd/autoscaling.karpenter.sh_horizontalautoscalers.yaml", v1alpha1.SchemeGroupVersion.Version)
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
