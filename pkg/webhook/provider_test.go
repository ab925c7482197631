package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/webhook/resourcesemantics"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/webhook"
)

// awsProvisioners registers the AWS provider rules as cmd/webhook does with --cluster-name.
func awsProvisioners() *cloudprovider.Registry {
	r := awsIDs()
	aws.RegisterProvider(r, aws.ProviderDefaults{ClusterName: "demo", InstanceProfile: "KarpenterNodeInstanceProfile-demo"})
	return r
}

// admitProvisioner defaults and validates a Provisioner with provider block through the types
// the admission controllers use, and returns what was admitted.
func admitProvisioner(t *testing.T, cloud *cloudprovider.Registry, block string) (*v1alpha5.Provisioner, *apis.FieldError) {
	t.Helper()
	p := provisioner("default", func(s *v1alpha5.ProvisionerSpec) {
		if block != "" {
			s.Provider = &runtime.RawExtension{Raw: []byte(block)}
		}
	})
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := apis.WithinCreate(context.Background())
	kind := v1alpha5.SchemeGroupVersion.WithKind("Provisioner")
	defaulted := webhook.DefaultingTypes(cloud)[kind].DeepCopyObject().(resourcesemantics.GenericCRD)
	if err := json.Unmarshal(raw, defaulted); err != nil {
		t.Fatal(err)
	}
	defaulted.SetDefaults(ctx)
	if raw, err = json.Marshal(defaulted); err != nil {
		t.Fatal(err)
	}
	validated := webhook.ValidationTypes(cloud, scaleAccess{})[kind].DeepCopyObject().(resourcesemantics.GenericCRD)
	if err := json.Unmarshal(raw, validated); err != nil {
		t.Fatal(err)
	}
	admitted := &v1alpha5.Provisioner{}
	if err := json.Unmarshal(raw, admitted); err != nil {
		t.Fatal(err)
	}
	return admitted, validated.Validate(ctx)
}

// Karpenter v0.5's provider blocks as its docs showed them pass, defaulted.
func TestAWSProviderBlocksOfV05AreAdmitted(t *testing.T) {
	for _, block := range []string{
		``,
		`{"instanceProfile":"KarpenterNodeInstanceProfile-demo"}`,
		`{"subnetSelector":{"karpenter.sh/discovery":"demo"},"securityGroupSelector":{"kubernetes.io/cluster/demo":"*"},"tags":{"team":"ml"}}`,
		`{"instanceProfile":"custom","subnetSelector":{"Name":"*Private*"},"securityGroupSelector":{"Name":"eks-cluster-sg-demo"}}`,
		`{"launchTemplate":"my-launch-template","subnetSelector":{"kubernetes.io/cluster/demo":"*"}}`,
	} {
		admitted, err := admitProvisioner(t, awsProvisioners(), block)
		if err != nil {
			t.Errorf("%s: %v", block, err)
			continue
		}
		parsed, perr := aws.ParseProviderBlock(admitted.Spec.Provider)
		if perr != nil || len(parsed.SubnetSelector) == 0 || (parsed.InstanceProfile == "" && parsed.LaunchTemplate == "") {
			t.Errorf("%s was admitted as %s (%v), want the defaults filled in", block, admitted.Spec.Provider.Raw, perr)
		}
	}
}

func TestInvalidAWSProviderBlocksNameTheField(t *testing.T) {
	for _, tt := range []struct{ block, want string }{
		{`{"instanceProfile":"p","amiFamily":"Bottlerocket"}`, "spec.provider.amiFamily"},
		{`{"launchTemplate":"t","securityGroupSelector":{"Name":"sg"}}`, "spec.provider.launchTemplate, spec.provider.securityGroupSelector"},
		{`{"tags":{"karpenter.sh/provisioner-name":"other"}}`, "spec.provider.tags[karpenter.sh/provisioner-name]"},
		{`{"tags":{"kubernetes.io/cluster/demo":"owned"}}`, "spec.provider.tags[kubernetes.io/cluster/demo]"},
		{`{"subnetSelector":{"Name":""}}`, "spec.provider.subnetSelector[Name]"},
		{`{"instanceProfile":7}`, "spec.provider.instanceProfile"},
	} {
		_, err := admitProvisioner(t, awsProvisioners(), tt.block)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error at %s", tt.block, err, tt.want)
		}
	}
}

// Without a cloud registered for Provisioners (no --cluster-name), any block passes unchanged.
func TestProviderBlocksWithoutACloudPassUnchanged(t *testing.T) {
	const block = `{"whatever":true}`
	admitted, err := admitProvisioner(t, awsIDs(), block)
	if err != nil || string(admitted.Spec.Provider.Raw) != block {
		t.Errorf("admitted %s (%v), want %s unchanged", admitted.Spec.Provider.Raw, err, block)
	}
}
