package aws_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

var validator = aws.ProviderBlockValidator{Defaults: aws.ProviderDefaults{ClusterName: "demo", InstanceProfile: "KarpenterNodeInstanceProfile-demo"}}

func raw(s string) *runtime.RawExtension {
	if s == "" {
		return nil
	}
	return &runtime.RawExtension{Raw: []byte(s)}
}

func TestDefaultProvider(t *testing.T) {
	tests := []struct {
		name, block string
		want        aws.ProviderBlock
	}{
		{"nil block gets every default", "", aws.ProviderBlock{
			InstanceProfile:       "KarpenterNodeInstanceProfile-demo",
			SubnetSelector:        map[string]string{"kubernetes.io/cluster/demo": "*"},
			SecurityGroupSelector: map[string]string{"kubernetes.io/cluster/demo": "*"},
		}},
		{"given values are kept", `{"instanceProfile":"mine","subnetSelector":{"Name":"private-*"},"securityGroupSelector":{"team":"a"},"tags":{"team":"a"}}`, aws.ProviderBlock{
			InstanceProfile:       "mine",
			SubnetSelector:        map[string]string{"Name": "private-*"},
			SecurityGroupSelector: map[string]string{"team": "a"},
			Tags:                  map[string]string{"team": "a"},
		}},
		{"a launch template carries the profile and the groups", `{"launchTemplate":"mine"}`, aws.ProviderBlock{
			LaunchTemplate: "mine",
			SubnetSelector: map[string]string{"kubernetes.io/cluster/demo": "*"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := aws.ParseProviderBlock(validator.DefaultProvider(context.Background(), raw(tt.block)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("defaulted block (-want +got):\n%s", diff)
			}
		})
	}
	unknown := raw(`{"amiFamily":"AL2"}`)
	if got := validator.DefaultProvider(context.Background(), unknown); got != unknown {
		t.Errorf("a block with an unknown field was changed to %s; validation must see it as written", got.Raw)
	}
}

func TestValidateProvider(t *testing.T) {
	tests := []struct {
		name, block string
		// wantPaths are the paths the error names; none means valid.
		wantPaths []string
		wantText  string
	}{
		{name: "empty block, defaults to come", block: ""},
		{name: "empty selector, defaults to come", block: `{"securityGroupSelector":{"a":"*"}}`},
		{name: "v0.5 example", block: `{"instanceProfile":"KarpenterNodeInstanceProfile-demo","subnetSelector":{"karpenter.sh/discovery":"demo"},"securityGroupSelector":{"kubernetes.io/cluster/demo":"*"},"tags":{"team":"ml","cost-center":"42"}}`},
		{name: "user launch template", block: `{"launchTemplate":"my-template","subnetSelector":{"Name":"private"}}`},
		{name: "unknown field", block: `{"instanceProfile":"p","amiFamily":"AL2"}`, wantPaths: []string{"amiFamily"}, wantText: "must not set"},
		{name: "wrong type", block: `{"tags":["a"]}`, wantPaths: []string{"tags"}, wantText: "invalid value"},
		{name: "not an object", block: `[]`, wantPaths: []string{}, wantText: "must be an object"},
		{name: "launch template with security groups", block: `{"launchTemplate":"t","securityGroupSelector":{"a":"b"}}`, wantPaths: []string{"launchTemplate", "securityGroupSelector"}, wantText: "carries the security groups"},
		{name: "reserved karpenter tag", block: `{"tags":{"karpenter.sh/provisioner-name":"other"}}`, wantPaths: []string{"tags[karpenter.sh/provisioner-name]"}, wantText: "reserved"},
		{name: "reserved cluster tag", block: `{"tags":{"kubernetes.io/cluster/other":"owned"}}`, wantPaths: []string{"tags[kubernetes.io/cluster/other]"}, wantText: "reserved"},
		{name: "empty tag key", block: `{"tags":{"":"x"}}`, wantPaths: []string{"tags[]"}, wantText: "must not be empty"},
		{name: "empty selector", block: `{"subnetSelector":{}}`, wantPaths: []string{"subnetSelector"}, wantText: "at least one tag"},
		{name: "empty selector value", block: `{"subnetSelector":{"Name":""}}`, wantPaths: []string{"subnetSelector[Name]"}, wantText: "for any"},
		{name: "empty selector key", block: `{"securityGroupSelector":{"":"x"}}`, wantPaths: []string{"securityGroupSelector[]"}, wantText: "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validator.ValidateProvider(context.Background(), raw(tt.block))
			if tt.wantPaths == nil {
				if errs != nil {
					t.Fatalf("ValidateProvider = %v, want valid", errs)
				}
				return
			}
			if errs == nil {
				t.Fatalf("ValidateProvider accepted %s", tt.block)
			}
			for _, path := range tt.wantPaths {
				if !strings.Contains(errs.Error(), path) {
					t.Errorf("error %q does not name %s", errs.Error(), path)
				}
			}
			if !strings.Contains(errs.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", errs.Error(), tt.wantText)
			}
		})
	}
}

// Without the controller's defaults (a webhook not told the cluster or the profile) a block must
// say what it cannot default.
func TestValidateProviderWithoutDefaults(t *testing.T) {
	errs := aws.ProviderBlockValidator{}.ValidateProvider(context.Background(), raw(`{}`))
	for _, field := range []string{"instanceProfile", "subnetSelector", "securityGroupSelector"} {
		if errs == nil || !strings.Contains(errs.Error(), field) {
			t.Errorf("ValidateProvider({}) = %v, want it to name %s", errs, field)
		}
	}
}

// The Registry delegates to the AWS rules once registered, as the webhook and the controller use it.
func TestRegistryValidatesProvisionerBlocksWithAWSRules(t *testing.T) {
	r := cloudprovider.NewRegistry()
	aws.RegisterProvider(r, validator.Defaults)
	ctx := context.Background()
	if errs := r.ValidateProvider(ctx, raw(`{"subnetSelector":{"a":"b"},"bogus":1}`)); errs == nil || !strings.Contains(errs.Error(), "bogus") {
		t.Errorf("ValidateProvider = %v, want bogus rejected", errs)
	}
	var block map[string]any
	if err := json.Unmarshal(r.DefaultProvider(ctx, nil).Raw, &block); err != nil || block["instanceProfile"] != "KarpenterNodeInstanceProfile-demo" {
		t.Errorf("DefaultProvider(nil) = %v (%v), want the default instance profile", block, err)
	}
}
