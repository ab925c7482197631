package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/webhook/resourcesemantics"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/webhook"
)

// validateOnCreate validates a Provisioner through the type the validation admission
// controller uses, as on its creation, and returns its errors and its warnings apart.
func validateOnCreate(t *testing.T, p *v1alpha5.Provisioner) (errs, warnings *apis.FieldError) {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	validated := webhook.ValidationTypes(awsIDs(), scaleAccess{})[v1alpha5.SchemeGroupVersion.WithKind("Provisioner")].DeepCopyObject().(resourcesemantics.GenericCRD)
	if err := json.Unmarshal(raw, validated); err != nil {
		t.Fatal(err)
	}
	result := validated.Validate(apis.WithinCreate(context.Background()))
	return result.Filter(apis.ErrorLevel), result.Filter(apis.WarningLevel)
}

// TestTTLSecondsUntilExpiredZeroIsAdmittedWithAWarning is finding 4 of issue 34: 0 replaces
// every node of the Provisioner without end. v0.5 admitted it, so it is admitted still, with a
// warning kubectl prints that says what it does.
func TestTTLSecondsUntilExpiredZeroIsAdmittedWithAWarning(t *testing.T) {
	const said = "ttlSecondsUntilExpired is 0: every node of this Provisioner expires as soon as it is launched"
	for _, tc := range []struct {
		name   string
		ttl    *int64
		warned bool
	}{
		{"zero", ptr.To[int64](0), true},
		{"an hour", ptr.To[int64](3600), false},
		{"unset", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := validateOnCreate(t, provisioner("ttl", func(s *v1alpha5.ProvisionerSpec) { s.TTLSecondsUntilExpired = tc.ttl }))
			if errs != nil {
				t.Errorf("refused: %v", errs)
			}
			switch {
			case tc.warned && (warnings == nil || !strings.Contains(warnings.Error(), said) || !strings.Contains(warnings.Error(), "spec.ttlSecondsUntilExpired")):
				t.Errorf("warnings %v, want one at spec.ttlSecondsUntilExpired containing %q", warnings, said)
			case !tc.warned && warnings != nil:
				t.Errorf("warned %v", warnings)
			}
		})
	}
}

// TestTTLSecondsAfterEmptyWithConsolidationIsAdmittedWithAWarning is finding 15 of issue 34:
// the pair is admitted, as manifests written for v0.5 and consolidation must apply unchanged
// (Karpenter v0.15 refused it), with a warning that says which wins.
func TestTTLSecondsAfterEmptyWithConsolidationIsAdmittedWithAWarning(t *testing.T) {
	const said = "consolidation decides on this Provisioner's empty nodes too, and ttlSecondsAfterEmpty is not applied"
	for _, tc := range []struct {
		name        string
		ttl         *int64
		consolidate *bool
		warned      bool
	}{
		{"both", ptr.To[int64](30), ptr.To(true), true},
		{"consolidation disabled", ptr.To[int64](30), ptr.To(false), false},
		{"no ttl", nil, ptr.To(true), false},
		{"ttl alone", ptr.To[int64](30), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := validateOnCreate(t, provisioner("both", func(s *v1alpha5.ProvisionerSpec) {
				s.TTLSecondsAfterEmpty = tc.ttl
				if tc.consolidate != nil {
					s.Consolidation = &v1alpha5.Consolidation{Enabled: tc.consolidate}
				}
			}))
			if errs != nil {
				t.Errorf("refused: %v", errs)
			}
			switch {
			case tc.warned && (warnings == nil || !strings.Contains(warnings.Error(), said) || !strings.Contains(warnings.Error(), "spec.ttlSecondsAfterEmpty")):
				t.Errorf("warnings %v, want one at spec.ttlSecondsAfterEmpty containing %q", warnings, said)
			case !tc.warned && warnings != nil:
				t.Errorf("warned %v", warnings)
			}
		})
	}
}
