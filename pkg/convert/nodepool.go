package convert

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"knative.dev/pkg/apis"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/seconds"
)

// Budgets of a Provisioner with ttlSecondsAfterEmpty: its empty nodes went as soon as their
// TTL passed, however many at once, and v1's default (10%) applies to every other reason.
var emptinessBudgets = []v1.Budget{
	{Nodes: "100%", Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}},
	{Nodes: "10%", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}},
}

// convertNodePool is the NodePool of p, named after it, its nodes configured by the
// EC2NodeClass of the same name.
func convertNodePool(p *v1alpha5.Provisioner) (*v1.NodePool, []Warning, *apis.FieldError) {
	pool := &v1.NodePool{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool"},
		// The Provisioner's own labels and annotations (tooling's, as a GitOps tool's) go with
		// it; kubectl's record of the applied Provisioner describes the Provisioner only.
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: p.Labels, Annotations: withoutLastApplied(p.Annotations)},
	}
	labels, errs := templateLabels(p.Spec.Labels)
	pool.Spec.Template.Labels = labels
	spec := &pool.Spec.Template.Spec
	spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.SchemeGroupVersion.Group, Kind: "EC2NodeClass", Name: p.Name}
	spec.Taints = v1.TaintsFrom(p.Spec.Taints)
	for _, r := range p.Spec.Requirements {
		spec.Requirements = append(spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: slices.Clone(r.Values),
		})
	}
	if grace := p.Spec.TerminationGracePeriodSeconds; grace != nil {
		spec.TerminationGracePeriod = &metav1.Duration{Duration: seconds.Duration(min(*grace, seconds.Max))}
	}
	expireAfter, warnings, expiryErr := convertExpiry(p.Spec.TTLSecondsUntilExpired)
	spec.ExpireAfter = expireAfter
	errs = errs.Also(expiryErr)
	var disruptionWarnings []Warning
	pool.Spec.Disruption, disruptionWarnings = convertDisruption(p)
	if p.Spec.Limits != nil && len(p.Spec.Limits.Resources) > 0 {
		pool.Spec.Limits = v1.Limits(p.Spec.Limits.Resources.DeepCopy())
	}
	return pool, append(warnings, disruptionWarnings...), errs
}

// convertExpiry is expireAfter for ttlSecondsUntilExpired. Unset is Never, not v1's default of
// 720h, which would start expiring nodes the Provisioner never expired.
func convertExpiry(ttl *int64) (v1.NillableDuration, []Warning, *apis.FieldError) {
	if ttl == nil {
		return v1.NillableDuration{}, nil, nil
	}
	if *ttl == 0 {
		return v1.NillableDuration{}, nil, fieldError("ttlSecondsUntilExpired",
			"0 replaced every node of the Provisioner as soon as it launched, one at a time; v1's expireAfter 0s deletes every node at once as soon as it launches: "+
				"remove the field for nodes that never expire (expireAfter Never), or set the age at which to replace them")
	}
	expireAfter := durationOf(*ttl)
	return expireAfter, []Warning{{
		Field: "spec.ttlSecondsUntilExpired",
		Message: fmt.Sprintf("converted to expireAfter %s, whose expiry is forceful as upstream's: an expired node is drained and deleted at once, in no disruption budget and without "+
			"a replacement launched first, where the Provisioner replaced one expired node at a time, its replacement Ready first; the node's pods wait for new capacity", expireAfter),
	}}, nil
}

// convertDisruption is how the Provisioner's nodes went: with consolidation enabled,
// WhenEmptyOrUnderutilized under its budget; with ttlSecondsAfterEmpty only, WhenEmpty after
// the TTL, unbudgeted as emptiness was; with neither, no consolidation at all (Never).
func convertDisruption(p *v1alpha5.Provisioner) (v1.Disruption, []Warning) {
	var warnings []Warning
	var budget *intstr.IntOrString
	if p.Spec.Consolidation != nil {
		budget = p.Spec.Consolidation.Budget
	}
	ttl := p.Spec.TTLSecondsAfterEmpty
	if p.ConsolidationEnabled() {
		d := v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: durationOf(0)}
		if budget != nil {
			d.Budgets = []v1.Budget{{Nodes: budget.String()}}
		}
		if ttl != nil {
			warnings = append(warnings, Warning{Field: "spec.ttlSecondsAfterEmpty",
				Message: "not converted: with consolidation.enabled it was not applied (consolidation decided on empty nodes too), and WhenEmptyOrUnderutilized does the same"})
		}
		return d, warnings
	}
	if budget != nil {
		warnings = append(warnings, Warning{Field: "spec.consolidation.budget",
			Message: fmt.Sprintf("not converted: it bounded consolidation, which this Provisioner does not enable; v1 budgets bound every disruption (drift too), so %s would bound more than it did", budget.String())})
	}
	if ttl == nil {
		return v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: v1.NillableDuration{}}, warnings
	}
	return v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: durationOf(*ttl), Budgets: slices.Clone(emptinessBudgets)}, warnings
}

// durationOf is n seconds as a v1 duration; a count stored before the CRD bounded it is the
// longest one Karpenter represents, as the Provisioner's controllers read it.
func durationOf(n int64) v1.NillableDuration {
	d := seconds.Duration(min(n, seconds.Max))
	return v1.NillableDuration{Duration: &d}
}

// templateLabels are the Provisioner's node labels as a NodePool's; v1 reserves two label
// domains the Provisioner's webhook did not.
func templateLabels(labels map[string]string) (map[string]v1.LabelValue, *apis.FieldError) {
	if len(labels) == 0 {
		return nil, nil
	}
	var errs *apis.FieldError
	out := make(map[string]v1.LabelValue, len(labels))
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if reason := restrictedLabel(key); reason != "" {
			errs = errs.Also(fieldError(fmt.Sprintf("labels[%s]", key), "%s: pods that select it must select a label of your own domain, and the NodePool set that one", reason))
			continue
		}
		out[key] = v1.LabelValue(labels[key])
	}
	return out, errs
}

// restrictedLabel says why v1 refuses key as a NodePool's label, as the NodePool CRD's rules on
// template.metadata.labels do, or "" when it takes it.
func restrictedLabel(key string) string {
	// The rules read the domain as the CRD does: the key up to its first '/', or all of it.
	domain, _, _ := strings.Cut(key, "/")
	switch {
	case strings.HasSuffix(domain, "karpenter.sh") && key != v1.CapacityTypeLabelKey:
		return fmt.Sprintf("v1 reserves the label domain karpenter.sh (but %s) for Karpenter", v1.CapacityTypeLabelKey)
	case strings.HasSuffix(domain, "karpenter.k8s.aws") && !slices.Contains(awsv1.InstanceTypeLabels, key) && !slices.Contains(awsv1.LaunchLabels, key):
		return "v1 reserves the label domain karpenter.k8s.aws (but its well-known labels) for Karpenter"
	}
	return ""
}

// withoutLastApplied is annotations without kubectl's last-applied-configuration.
func withoutLastApplied(annotations map[string]string) map[string]string {
	if _, ok := annotations[corev1.LastAppliedConfigAnnotation]; !ok {
		return annotations
	}
	out := maps.Clone(annotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	if len(out) == 0 {
		return nil
	}
	return out
}
