package apis_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/test/crds"
)

// awsDomainRule is the message every rule restricting the karpenter.k8s.aws label domain
// starts with.
const awsDomainRule = `label domain "karpenter.k8s.aws" is restricted`

var quoted = regexp.MustCompile(`'(karpenter\.k8s\.aws/[^']*)'`)

// allowedAWSLabels are the labels a rule restricting the karpenter.k8s.aws domain lets through,
// and its message lists, suffixes after the domain.
func allowedAWSLabels(t *testing.T, schema apiextensionsv1.JSONSchemaProps, at string) (allowed, listed []string) {
	t.Helper()
	for _, rule := range schema.XValidations {
		if !strings.HasPrefix(rule.Message, awsDomainRule) {
			continue
		}
		for _, m := range quoted.FindAllStringSubmatch(rule.Rule, -1) {
			allowed = append(allowed, m[1])
		}
		_, suffixes, found := strings.Cut(rule.Message, "karpenter.k8s.aws/ followed by one of ")
		if !found {
			t.Fatalf("%s: the message %q lists no labels", at, rule.Message)
		}
		for _, suffix := range strings.Split(suffixes, ", ") {
			listed = append(listed, "karpenter.k8s.aws/"+suffix)
		}
		return allowed, listed
	}
	t.Fatalf("%s has no rule restricting the karpenter.k8s.aws domain", at)
	return nil, nil
}

func sorted(labels []string) []string {
	labels = slices.Clone(labels)
	slices.Sort(labels)
	return slices.Compact(labels)
}

// TestRestrictedAWSDomainMatchesGo fails when the CEL rules restricting the karpenter.k8s.aws
// label domain, which repeat its well-known labels as literals (and their messages, as a list
// for the reader), disagree with awsv1's lists of them.
func TestRestrictedAWSDomainMatchesGo(t *testing.T) {
	nodePool := crds.SpecSchema(t, "../../config/crd/karpenter.sh_nodepools.yaml", "v1")
	template := nodePool.Properties["template"]
	want := sorted(append(slices.Clone(awsv1.InstanceTypeLabels), awsv1.LaunchLabels...))
	for at, schema := range map[string]apiextensionsv1.JSONSchemaProps{
		"NodePool spec.template.metadata.labels":   template.Properties["metadata"].Properties["labels"],
		"NodePool spec.template.spec.requirements": template.Properties["spec"].Properties["requirements"],
	} {
		allowed, listed := allowedAWSLabels(t, schema, at)
		if got := sorted(allowed); !slices.Equal(got, want) {
			t.Errorf("%s allows %v,\nwant %v", at, got, want)
		}
		if got := sorted(listed); !slices.Equal(got, want) {
			t.Errorf("%s's message lists %v,\nwant %v", at, got, want)
		}
	}
}
