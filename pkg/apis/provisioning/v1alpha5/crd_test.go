package v1alpha5_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/scheduling"
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
	capacityTypes := literals(ruleWithMessage(t, requirement.XValidations, "karpenter.sh/capacity-type values must be spot or on-demand"))
	if want := []string{v1alpha5.CapacityTypeLabelKey, v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand}; !sameSet(capacityTypes, want) {
		t.Errorf("the capacity type rule names %v, want %v", capacityTypes, want)
	}

	labels := spec.Properties["labels"]
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
