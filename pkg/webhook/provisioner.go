package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// provisioner gives v1alpha5.Provisioner its admission semantics; cloud defaults and
// validates its spec.provider block.
type provisioner struct {
	v1alpha5.Provisioner
	cloud cloudprovider.ProviderValidator
}

func (p *provisioner) DeepCopyObject() runtime.Object {
	return &provisioner{Provisioner: *p.Provisioner.DeepCopy(), cloud: p.cloud}
}

func (p *provisioner) SupportedSubResources() []string { return mainResourceOnly }

func (p *provisioner) SupportedVerbs() []admissionregistrationv1.OperationType {
	return createAndUpdate
}

func (p *provisioner) SetDefaults(ctx context.Context) {
	if apis.IsInStatusUpdate(ctx) {
		return
	}
	DefaultProvisioner(ctx, &p.Provisioner, p.cloud)
}

func (p *provisioner) Validate(ctx context.Context) *apis.FieldError {
	if skipValidation(ctx, func(old *provisioner) bool {
		// The new object has been defaulted, the stored one maybe not.
		defaulted := old.Provisioner.DeepCopy()
		DefaultProvisioner(ctx, defaulted, p.cloud)
		return equality.Semantic.DeepEqual(defaulted.Spec, p.Spec)
	}) {
		return nil
	}
	return ValidateProvisioner(ctx, &p.Provisioner, p.cloud).Also(provisionerWarnings(&p.Provisioner))
}

// provisionerWarnings are the Provisioner's v1alpha5.Warnings as admission warnings, which
// admit the object and which kubectl prints.
func provisionerWarnings(p *v1alpha5.Provisioner) *apis.FieldError {
	var warnings *apis.FieldError
	for _, w := range p.Warnings() {
		warnings = warnings.Also(apis.ErrGeneric(w.Message, w.Field).At(apis.WarningLevel))
	}
	return warnings.ViaField("spec")
}

// Karpenter v0.5's defaults for what a Provisioner leaves unconstrained: on-demand capacity
// (spot is an opt-in, as it can be reclaimed) and amd64, the architecture most images have.
var defaultRequirements = []v1alpha5.NodeSelectorRequirement{
	{Key: v1alpha5.CapacityTypeLabelKey, Operator: v1alpha5.NodeSelectorOperator(corev1.NodeSelectorOpIn), Values: []string{v1alpha5.CapacityTypeOnDemand}},
	{Key: corev1.LabelArchStable, Operator: v1alpha5.NodeSelectorOperator(corev1.NodeSelectorOpIn), Values: []string{"amd64"}},
}

// DefaultProvisioner adds v0.5's capacity type and architecture requirements where the
// Provisioner has no requirement on those labels, and lets the cloud default spec.provider.
// An unset TTL or limit means what it says (never, none) and stays unset.
func DefaultProvisioner(ctx context.Context, p *v1alpha5.Provisioner, cloud cloudprovider.ProviderValidator) {
	for _, d := range defaultRequirements {
		constrained := slices.ContainsFunc(p.Spec.Requirements, func(r v1alpha5.NodeSelectorRequirement) bool { return r.Key == d.Key })
		if !constrained {
			p.Spec.Requirements = append(p.Spec.Requirements, *d.DeepCopy())
		}
	}
	p.Spec.Provider = cloud.DefaultProvider(ctx, p.Spec.Provider)
}

// ValidateProvisioner checks what the CRD schema cannot: label and taint syntax (and, as the
// CRD does, labels the kubelet refuses), that each
// requirement's operator makes sense for its key and its values are ones the label can
// take, that limits are not negative, and, through the cloud, spec.provider. On
// requirements it also applies the CRD's own rules, so that it rejects every requirement
// the CRD does.
func ValidateProvisioner(ctx context.Context, p *v1alpha5.Provisioner, cloud cloudprovider.ProviderValidator) *apis.FieldError {
	var errs *apis.FieldError
	errs = errs.Also(validateLabels(p.Spec.Labels, "labels"))
	errs = errs.Also(validateKubeletLabels(p.Spec.Labels, "labels"))
	errs = errs.Also(validateTaints(p.Spec.Taints))
	for i, r := range p.Spec.Requirements {
		errs = errs.Also(validateRequirement(r).ViaFieldIndex("requirements", i))
	}
	if p.Spec.Limits != nil {
		errs = errs.Also(validateResources(p.Spec.Limits.Resources, "resources").ViaField("limits"))
	}
	errs = errs.Also(cloud.ValidateProvider(ctx, p.Spec.Provider).ViaField("provider"))
	return errs.ViaField("spec")
}

// validateRequirement applies the CRD's rules on a requirement (a well-known key, a node
// selector operator, the values it takes), so the webhook rejects whatever the CRD does, then
// what the CRD cannot know: no well-known label takes numbers, and which values some take.
func validateRequirement(r v1alpha5.NodeSelectorRequirement) *apis.FieldError {
	if !slices.Contains(v1alpha5.WellKnownLabels, r.Key) {
		return &apis.FieldError{
			Message: fmt.Sprintf("unsupported key %q: requirements constrain only %s", r.Key, strings.Join(v1alpha5.WellKnownLabels, ", ")),
			Paths:   []string{"key"},
		}
	}
	operator := corev1.NodeSelectorOperator(r.Operator)
	if !slices.Contains(scheduling.Operators, operator) {
		return &apis.FieldError{
			Message: fmt.Sprintf("unsupported operator %q: expected one of %s", r.Operator, joinOperators(scheduling.Operators)),
			Paths:   []string{"operator"},
		}
	}
	if msg := valuesCountError(operator, r.Values); msg != "" {
		return &apis.FieldError{Message: msg, Paths: []string{"values"}}
	}
	if operator == corev1.NodeSelectorOpGt || operator == corev1.NodeSelectorOpLt {
		// Every well-known label has names for values, never numbers.
		return &apis.FieldError{
			Message: fmt.Sprintf("operator %s is not supported for key %s, whose values are not numbers; use In or NotIn", r.Operator, r.Key),
			Paths:   []string{"operator"},
		}
	}
	var errs *apis.FieldError
	for i, value := range r.Values {
		if msg := requirementValueError(r.Key, value); msg != "" {
			errs = errs.Also(&apis.FieldError{Message: msg, Paths: []string{fmt.Sprintf("values[%d]", i)}})
		}
	}
	return errs
}

// valuesCountError says, in the words of the CRD's rules, why values do not suit operator, or "".
func valuesCountError(operator corev1.NodeSelectorOperator, values []string) string {
	switch operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(values) == 0 {
			return "operators In and NotIn require at least one value"
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(values) > 0 {
			return "operators Exists and DoesNotExist take no values"
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if _, err := scheduling.NewRequirement(operator, values...); err != nil {
			return "operators Gt and Lt require exactly one integer value"
		}
	}
	return ""
}

func joinOperators(operators []corev1.NodeSelectorOperator) string {
	names := make([]string, len(operators))
	for i, operator := range operators {
		names[i] = string(operator)
	}
	return strings.Join(names, ", ")
}

// requirementValueError says why value can never be the value of the label key, or "".
func requirementValueError(key, value string) string {
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		return fmt.Sprintf("invalid label value %q: %s", value, strings.Join(msgs, "; "))
	}
	oneOf := func(supported []string) string {
		if slices.Contains(supported, value) {
			return ""
		}
		return fmt.Sprintf("%s %q is not supported, expected one of %s", key, value, strings.Join(supported, ", "))
	}
	switch key {
	case corev1.LabelArchStable:
		return oneOf(v1alpha5.Architectures)
	case corev1.LabelOSStable:
		return oneOf(v1alpha5.OperatingSystems)
	case v1alpha5.CapacityTypeLabelKey:
		return oneOf([]string{v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand})
	}
	return ""
}
