package v1alpha5_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// TestEveryInvalidRequirementValueIsReported is finding 18 of issue 34: a Provisioner with
// values: [spto] for the capacity type was refused with a message that named no value, and
// architectures and operating systems no node has were left for the webhook, which the
// apiserver does not call once the CRD refuses: one look at the refusal must show every value
// to fix.
func TestEveryInvalidRequirementValueIsReported(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	object := manifests.Decode(t, `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: values}
spec:
  requirements:
  - {key: karpenter.sh/capacity-type, operator: In, values: [spto, spot, ondemand]}
  - {key: kubernetes.io/arch, operator: NotIn, values: [x86_64, amd64, aarch64]}
  - {key: kubernetes.io/os, operator: In, values: [darwin, linux]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`)
	err := env.Client.Create(context.Background(), object, client.DryRunAll)
	if err == nil {
		t.Fatal("admitted")
	}
	for _, want := range []string{
		`spec.requirements[0]: Invalid value: "object": karpenter.sh/capacity-type values must be spot or on-demand, got spto, spot, ondemand`,
		`spec.requirements[1]: Invalid value: "object": kubernetes.io/arch values must be GOARCH names (386, amd64, arm, arm64, ppc64le, riscv64, s390x), got x86_64, amd64, aarch64`,
		`spec.requirements[2]: Invalid value: "object": kubernetes.io/os values must be linux or windows, got darwin, linux`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refused with\n  %v\nwant a message containing\n  %s", err, want)
		}
	}
}
