package webhook_test

import (
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// TestTagsEC2RefusesAreRefusedAtAdmission is finding 8 of issue 34: spec.provider.tags are put
// on every instance by CreateFleet, which refuses a tag key beginning with aws: (in any case:
// AWS reserves the prefix) or longer than 127 characters, and a value longer than 256; every
// launch of the Provisioner then failed. The webhook refuses them with EC2's rule.
func TestTagsEC2RefusesAreRefusedAtAdmission(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{`{"tags":{"aws:team":"ml"}}`, `invalid key "aws:team": tag keys beginning with aws: are reserved for AWS, and EC2 refuses them: spec.provider.tags[aws:team]`},
		{`{"tags":{"AWS:cloudformation:stack-name":"x"}}`, `invalid key "AWS:cloudformation:stack-name": tag keys beginning with aws: are reserved for AWS, and EC2 refuses them: spec.provider.tags[AWS:cloudformation:stack-name]`},
		{`{"tags":{"` + strings.Repeat("k", 128) + `":"x"}}`, `tag keys are at most 127 characters long on EC2`},
		{`{"tags":{"team":"` + strings.Repeat("v", 257) + `"}}`, `tag values are at most 256 characters long on EC2: spec.provider.tags[team]`},
	} {
		_, err := admitProvisioner(t, awsProvisioners(), tc.block)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: %v, want an error containing %q", tc.block, err, tc.want)
		}
	}
	for _, block := range []string{
		`{"tags":{"team":"aws:ml"}}`, // only keys are reserved on EC2
		`{"tags":{"` + strings.Repeat("k", 127) + `":"` + strings.Repeat("v", 256) + `"}}`,
		`{"tags":{"awsome":"x"}}`,
	} {
		if _, err := admitProvisioner(t, awsProvisioners(), block); err != nil {
			t.Errorf("%.60s: %v, want admitted", block, err)
		}
	}
}

// TestLabelsTheKubeletRefusesAreRefusedByTheWebhook is finding 8 of issue 34 as the webhook
// sees it, which repeats the CRD's rule with the kubelet's own list of the labels it may set.
func TestLabelsTheKubeletRefusesAreRefusedByTheWebhook(t *testing.T) {
	refused := provisioner("labels", func(s *v1alpha5.ProvisionerSpec) {
		s.Labels = map[string]string{"node-role.kubernetes.io/worker": "", "team": "ml", "node.kubernetes.io/pool": "a"}
	})
	err := admit(refused)
	want := "the kubelet refuses to register a node with label node-role.kubernetes.io/worker"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "spec.labels[node-role.kubernetes.io/worker]") {
		t.Errorf("error %v, want one at spec.labels[node-role.kubernetes.io/worker] containing %q", err, want)
	}
	if err != nil && len(err.WrappedErrors()) != 1 {
		t.Errorf("%d errors, want only the node-role label's: %v", len(err.WrappedErrors()), err)
	}
}
