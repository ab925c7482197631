package webhook_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/webhook"
)

// requirementCase is one entry of the requirement cases the CRD's test also feeds through a
// real apiserver.
type requirementCase struct {
	Name        string                           `json:"name"`
	Requirement v1alpha5.NodeSelectorRequirement `json:"requirement"`
	// CRD is what the CRD says, empty when it admits the requirement.
	CRD string `json:"crd"`
	// Webhook is what the webhook says, empty when it admits the requirement.
	Webhook string `json:"webhook"`
}

// TestRequirementsAgreeWithCRD validates the CRD test's requirement cases: the webhook rejects
// every requirement the CRD rejects, with the message the table expects.
func TestRequirementsAgreeWithCRD(t *testing.T) {
	data, err := os.ReadFile("../apis/provisioning/v1alpha5/testdata/requirements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []requirementCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("reading the requirement cases, %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.CRD != "" && tc.Webhook == "" {
				t.Fatalf("the table has the CRD reject and the webhook admit; the webhook must reject whatever the CRD does")
			}
			err := webhook.ValidateProvisioner(context.Background(), provisioner("requirement", func(s *v1alpha5.ProvisionerSpec) {
				s.Requirements = []v1alpha5.NodeSelectorRequirement{tc.Requirement}
			}), awsIDs())
			switch {
			case tc.Webhook == "" && err != nil:
				t.Errorf("rejected with %v, want admitted", err)
			case tc.Webhook != "" && err == nil:
				t.Errorf("admitted, want a message containing %q", tc.Webhook)
			case tc.Webhook != "" && !strings.Contains(err.Error(), tc.Webhook):
				t.Errorf("rejected with\n  %v\nwant a message containing\n  %s", err, tc.Webhook)
			}
		})
	}
}
