package v1alpha5_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

const valid = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  labels: {team: ml}
  taints: [{key: example.com/gpu, value: "true", effect: NoSchedule}]
  requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
    - {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-west-2d]}
    - {key: kubernetes.io/arch, operator: Exists}
  provider:
    subnetSelector: {karpenter.sh/discovery: demo}
    securityGroupSelector: {karpenter.sh/discovery: demo}
  ttlSecondsAfterEmpty: 30
  ttlSecondsUntilExpired: 2592000
  terminationGracePeriodSeconds: 600
  limits:
    resources: {cpu: "1000", memory: 1000Gi}
  consolidation: {enabled: true, budget: 20%}
`

// TestProvisionerAdmission applies the Provisioner CRD's schema and CEL rules on a real
// apiserver; the requirement cases are shared with the webhook's tests.
func TestProvisionerAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := context.Background()

	provisioner := manifests.Decode(t, valid)
	if err := env.Client.Create(ctx, provisioner); err != nil {
		t.Fatalf("a valid provisioner was rejected, %v", err)
	}
	stored := &v1alpha5.Provisioner{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.Requirements) != 3 || stored.Spec.Provider == nil || !strings.Contains(string(stored.Spec.Provider.Raw), "subnetSelector") {
		t.Errorf("the provisioner did not round-trip, the free-form provider included: %+v", stored.Spec)
	}

	// Manifests written for Karpenter v0.5 apply unchanged.
	for _, object := range manifests.DecodeFile(t, "testdata/v0.5-examples.yaml") {
		if err := env.Client.Create(ctx, object, client.DryRunAll); err != nil {
			t.Errorf("v0.5's provisioner %s was rejected, %v", object.GetName(), err)
		}
	}

	for _, tc := range []struct{ name, spec, message string }{
		{"negative ttl", `ttlSecondsAfterEmpty: -1`, "spec.ttlSecondsAfterEmpty: Invalid value: -1"},
		{"negative drain deadline", `terminationGracePeriodSeconds: -1`, "spec.terminationGracePeriodSeconds: Invalid value: -1"},
		{"consolidation budget over 100%", `consolidation: {budget: 150%}`, "budget must be a non-negative number of nodes or a percentage from 0% to 100%"},
		{"negative consolidation budget", `consolidation: {budget: -1}`, "budget must be a non-negative number of nodes or a percentage from 0% to 100%"},
		{"consolidation budget in words", `consolidation: {budget: some}`, "budget must be a non-negative number of nodes or a percentage from 0% to 100%"},
		{"provisioner-name label", `labels: {karpenter.sh/provisioner-name: other}`, "label karpenter.sh/provisioner-name is set by Karpenter"},
		{"well-known label", `labels: {topology.kubernetes.io/zone: us-west-2a}`, "well-known labels are constrained through requirements, not labels"},
		{"bad taint effect", `taints: [{key: a, effect: Sometimes}]`, "taint effect must be one of NoSchedule, PreferNoSchedule, NoExecute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			object := manifests.Decode(t, "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: bad}\nspec:\n  "+tc.spec)
			err := env.Client.Create(ctx, object)
			if err == nil {
				t.Fatalf("the apiserver admitted %s", tc.spec)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("rejected with\n  %v\nwant a message containing\n  %s", err, tc.message)
			}
		})
	}

	for _, tc := range requirementCases(t) {
		t.Run("requirement: "+tc.Name, func(t *testing.T) {
			requirement, err := json.Marshal(tc.Requirement)
			if err != nil {
				t.Fatal(err)
			}
			object := manifests.Decode(t, "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: requirement}\nspec:\n  requirements: ["+string(requirement)+"]")
			err = env.Client.Create(ctx, object, client.DryRunAll)
			switch {
			case tc.CRD == "" && err != nil:
				t.Errorf("rejected with\n  %v\nwant admitted", err)
			case tc.CRD != "" && err == nil:
				t.Errorf("admitted, want a message containing\n  %s", tc.CRD)
			case tc.CRD != "" && !strings.Contains(err.Error(), tc.CRD):
				t.Errorf("rejected with\n  %v\nwant a message containing\n  %s", err, tc.CRD)
			}
		})
	}
}

// requirementCase is one entry of testdata/requirements.yaml.
type requirementCase struct {
	Name string `json:"name"`
	// Requirement is kept as written, so that an empty list of values reaches the apiserver.
	Requirement map[string]any `json:"requirement"`
	CRD         string         `json:"crd"`
	// Webhook is what pkg/webhook's tests expect of the webhook.
	Webhook string `json:"webhook"`
}

func requirementCases(t *testing.T) []requirementCase {
	t.Helper()
	data, err := os.ReadFile("testdata/requirements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []requirementCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("reading testdata/requirements.yaml, %v", err)
	}
	return cases
}
