package v1alpha5_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/scheduling"
	"karpenter.sh/karpenter/pkg/seconds"
	"karpenter.sh/karpenter/pkg/test/crds"
)

// quoted finds the CEL string literals of a rule.
var quoted = regexp.MustCompile(`'([^']*)'`)

func literals(rule string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(rule, -1) {
		out = append(out, m[1])
	}
	return out
}

// ruleWithMessage returns the rule of the validation whose message is message.
func ruleWithMessage(t *testing.T, rules apiextensionsv1.ValidationRules, message string) string {
	t.Helper()
	for _, r := range rules {
		if r.Message == message {
			return r.Rule
		}
	}
	t.Fatalf("no CEL rule with message %q", message)
	return ""
}

// ruleWithMessageExpression returns the validation whose message expression begins with prefix.
func ruleWithMessageExpression(t *testing.T, rules apiextensionsv1.ValidationRules, prefix string) apiextensionsv1.ValidationRule {
	t.Helper()
	for _, r := range rules {
		if strings.HasPrefix(r.MessageExpression, prefix) {
			return r
		}
	}
	t.Fatalf("no CEL rule with a message expression beginning %q", prefix)
	return apiextensionsv1.ValidationRule{}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// TestCRDMatchesGo fails when the markers of provisioner_types.go, which repeat the well-known
// labels, the operators and the capacity types in enums and CEL, disagree with the Go
// definitions the webhook and scheduler use.
func TestCRDMatchesGo(t *testing.T) {
	spec := crds.SpecSchema(t, "../../../../config/crd/karpenter.sh_provisioners.yaml", v1alpha5.SchemeGroupVersion.Version)
	requirement := spec.Properties["requirements"].Items.Schema
	if requirement == nil {
		t.Fatal("the CRD has no spec.requirements items schema")
	}
	enum := func(schema apiextensionsv1.JSONSchemaProps) []string {
		var out []string
		for _, v := range schema.Enum {
			out = append(out, strings.Trim(string(v.Raw), `"`))
		}
		return out
	}
	var operators []string
	for _, op := range scheduling.Operators {
		operators = append(operators, string(op))
	}

	if keys := enum(requirement.Properties["key"]); !sameSet(keys, v1alpha5.WellKnownLabels) {
		t.Errorf("requirement key enum %v, want v1alpha5.WellKnownLabels %v", keys, v1alpha5.WellKnownLabels)
	}
	if ops := enum(requirement.Properties["operator"]); !sameSet(ops, operators) {
		t.Errorf("requirement operator enum %v, want scheduling.Operators %v", ops, operators)
	}
	// Each operator has exactly one rule on how many values it takes.
	var covered []string
	for _, message := range []string{
		"operators In and NotIn require at least one value",
		"operators Exists and DoesNotExist take no values",
		"operators Gt and Lt require exactly one integer value",
	} {
		rule := ruleWithMessage(t, requirement.XValidations, message)
		covered = append(covered, literals(rule[:strings.Index(rule, "]")])...)
	}
	if slices.Sort(covered); !slices.Equal(covered, slices.Compact(slices.Clone(covered))) || !sameSet(covered, operators) {
		t.Errorf("the values rules cover operators %v, want each of %v once", covered, operators)
	}
	// No well-known label is numeric, so Gt and Lt are refused on each, as the webhook refuses them.
	if numeric := literals(ruleWithMessage(t, requirement.XValidations, "operators Gt and Lt compare integers, and no well-known label takes integer values")); !sameSet(numeric, append([]string{string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpLt)}, v1alpha5.WellKnownLabels...)) {
		t.Errorf("the Gt/Lt rule names %v, want Gt, Lt and v1alpha5.WellKnownLabels %v", numeric, v1alpha5.WellKnownLabels)
	}
	// The values some well-known labels take.
	for _, values := range []struct {
		key  string
		want []string
	}{
		{v1alpha5.CapacityTypeLabelKey, []string{v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand}},
		{corev1.LabelArchStable, v1alpha5.Architectures},
		{corev1.LabelOSStable, v1alpha5.OperatingSystems},
	} {
		rule := ruleWithMessageExpression(t, requirement.XValidations, "'"+values.key+" values must be ")
		if got := literals(rule.Rule); !sameSet(got, append([]string{values.key}, values.want...)) {
			t.Errorf("the %s rule names %v, want %v", values.key, got, values.want)
		}
		if !strings.Contains(rule.MessageExpression, strings.Join(values.want, ", ")) && !strings.Contains(rule.MessageExpression, strings.Join(values.want, " or ")) {
			t.Errorf("the %s message %s does not list %v", values.key, rule.MessageExpression, values.want)
		}
	}

	// The durations' bound is the longest time.Duration, the one pkg/seconds saturates at.
	for _, field := range []string{"ttlSecondsAfterEmpty", "ttlSecondsUntilExpired", "terminationGracePeriodSeconds"} {
		rule := ruleWithMessage(t, spec.Properties[field].XValidations, "must be at most 9223372036 seconds (about 292 years), the longest duration Karpenter can represent")
		if want := fmt.Sprintf("self <= %d", seconds.Max); rule != want {
			t.Errorf("spec.%s is bounded by %q, want %q", field, rule, want)
		}
	}

	labels := spec.Properties["labels"]
	// The labels the kubelet takes in its own namespaces are the kubelet's list.
	var kubeletLabels, patterns []string
	for _, literal := range literals(ruleWithMessageExpression(t, labels.XValidations, "'the kubelet refuses to register a node with label '").Rule) {
		if strings.HasPrefix(literal, "^") {
			patterns = append(patterns, literal)
		} else {
			kubeletLabels = append(kubeletLabels, literal)
		}
	}
	if !sameSet(kubeletLabels, kubeletapis.KubeletLabels()) {
		t.Errorf("the kubelet labels rule allows %v, want the kubelet's own %v", kubeletLabels, kubeletapis.KubeletLabels())
	}
	var namespaces []string
	for _, namespace := range kubeletapis.KubeletLabelNamespaces() {
		namespaces = append(namespaces, strings.TrimSuffix(namespace, ".kubernetes.io"))
	}
	if want := []string{"^([^/]*[.])?(kubernetes|k8s)[.]io/", "^([^/]*[.])?(" + strings.Join(namespaces, "|") + ")[.]kubernetes[.]io/"}; !slices.Equal(patterns, want) {
		t.Errorf("the kubelet labels rule matches %q, want %q (the kubelet's namespaces %v)", patterns, want, kubeletapis.KubeletLabelNamespaces())
	}
	if reserved := literals(ruleWithMessage(t, labels.XValidations, "well-known labels are constrained through requirements, not labels")); !sameSet(reserved, v1alpha5.WellKnownLabels) {
		t.Errorf("the labels rule reserves %v, want v1alpha5.WellKnownLabels %v", reserved, v1alpha5.WellKnownLabels)
	}
	if hostname := literals(ruleWithMessage(t, labels.XValidations, "label kubernetes.io/hostname is set by the node")); !slices.Equal(hostname, []string{corev1.LabelHostname}) {
		t.Errorf("the hostname rule names %v", hostname)
	}
	if name := literals(ruleWithMessage(t, labels.XValidations, "label karpenter.sh/provisioner-name is set by Karpenter")); !slices.Equal(name, []string{v1alpha5.ProvisionerNameLabelKey}) {
		t.Errorf("the provisioner-name rule names %v", name)
	}
}
