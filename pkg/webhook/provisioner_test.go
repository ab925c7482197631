package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/test/manifests"
	"karpenter.sh/karpenter/pkg/webhook"
)

// TestAdmitsKarpenterV05Provisioners keeps the promise that Provisioners written for Karpenter
// v0.5 still apply with the webhook installed.
func TestAdmitsKarpenterV05Provisioners(t *testing.T) {
	scheme := apis.NewScheme()
	for _, object := range manifests.DecodeFile(t, "../apis/provisioning/v1alpha5/testdata/v0.5-examples.yaml") {
		typed, err := scheme.New(object.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, typed); err != nil {
			t.Fatalf("decoding %s, %v", object.GetName(), err)
		}
		if err := admit(typed.(*v1alpha5.Provisioner)); err != nil {
			t.Errorf("%s was rejected: %v", object.GetName(), err)
		}
	}
}

func requirement(key string, operator corev1.NodeSelectorOperator, values ...string) v1alpha5.NodeSelectorRequirement {
	return v1alpha5.NodeSelectorRequirement{Key: key, Operator: v1alpha5.NodeSelectorOperator(operator), Values: values}
}

func TestDefaultProvisionerRequirements(t *testing.T) {
	onDemand := requirement(v1alpha5.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1alpha5.CapacityTypeOnDemand)
	amd64 := requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
	spot := requirement(v1alpha5.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1alpha5.CapacityTypeSpot)
	anyArch := requirement(corev1.LabelArchStable, corev1.NodeSelectorOpExists)
	zone := requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a")
	for _, tc := range []struct {
		name        string
		given, want []v1alpha5.NodeSelectorRequirement
	}{
		{"unconstrained gets on-demand and amd64", nil, []v1alpha5.NodeSelectorRequirement{onDemand, amd64}},
		{"other keys do not count", []v1alpha5.NodeSelectorRequirement{zone}, []v1alpha5.NodeSelectorRequirement{zone, onDemand, amd64}},
		{"a capacity type is kept", []v1alpha5.NodeSelectorRequirement{spot}, []v1alpha5.NodeSelectorRequirement{spot, amd64}},
		{"any operator on arch constrains it", []v1alpha5.NodeSelectorRequirement{anyArch}, []v1alpha5.NodeSelectorRequirement{anyArch, onDemand}},
		{"both constrained", []v1alpha5.NodeSelectorRequirement{anyArch, spot}, []v1alpha5.NodeSelectorRequirement{anyArch, spot}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := provisioner("p", func(s *v1alpha5.ProvisionerSpec) { s.Requirements = tc.given })
			webhook.DefaultProvisioner(context.Background(), p, cloudprovider.NewRegistry())
			if !equality.Semantic.DeepEqual(p.Spec.Requirements, tc.want) {
				t.Errorf("requirements %v, want %v", p.Spec.Requirements, tc.want)
			}
			again := p.DeepCopy()
			webhook.DefaultProvisioner(context.Background(), again, cloudprovider.NewRegistry())
			if !equality.Semantic.DeepEqual(again.Spec, p.Spec) {
				t.Error("defaulting is not idempotent")
			}
		})
	}
}

// TestProvisionerProviderGoesThroughTheCloud registers a cloud's ProviderValidator (the fake's)
// with the Registry: the webhook defaults spec.provider with it and reports its errors under
// spec.provider.
func TestProvisionerProviderGoesThroughTheCloud(t *testing.T) {
	ctx := context.Background()
	registry := awsIDs()
	registry.RegisterProvider(fake.NewInstanceProvider(fake.InstanceProviderOptions{}))

	p := provisioner("defaulted", nil)
	webhook.DefaultProvisioner(ctx, p, registry)
	var block fake.ProviderBlock
	if p.Spec.Provider == nil || json.Unmarshal(p.Spec.Provider.Raw, &block) != nil || block.InstanceProfile != fake.DefaultInstanceProfile {
		t.Errorf("spec.provider %v, want the cloud's default instance profile", p.Spec.Provider)
	}
	if err := webhook.ValidateProvisioner(ctx, p, registry); err != nil {
		t.Errorf("the defaulted provisioner was rejected, %v", err)
	}

	bad := provisioner("bad-provider", func(s *v1alpha5.ProvisionerSpec) {
		s.Provider = &runtime.RawExtension{Raw: []byte(`{"instanceProfile":"p","subnetSelectr":{"a":"b"}}`)}
	})
	webhook.DefaultProvisioner(ctx, bad, registry)
	err := webhook.ValidateProvisioner(ctx, bad, registry)
	if err == nil {
		t.Fatal("a provider block with an unknown field was admitted")
	}
	if !strings.Contains(err.Error(), "spec.provider.subnetSelectr") {
		t.Errorf("rejected with %v, want the unknown field under spec.provider", err)
	}
}
