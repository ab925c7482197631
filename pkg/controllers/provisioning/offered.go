package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Reasons of the Provisioner's RequirementsOffered condition and its Events.
const (
	ReasonValuesNotOffered = "ValuesNotOffered"
	ReasonValuesOffered    = "ValuesOffered"
)

// offeredKeys are the requirement keys whose values only the cloud knows, so that the CRD and
// the webhook admit any: a misspelt m5.larg is found here.
var offeredKeys = []struct{ key, noun string }{
	{corev1.LabelInstanceTypeStable, "instance type"},
	{corev1.LabelTopologyZone, "zone"},
}

// NotOffered names the values of the Provisioner's In and NotIn requirements on instance types
// and zones that no instance type the cloud offers it has, e.g. "no instance type m5.larg and
// no zone us-west-2z"; "" when it offers each. Only a Provisioner that names such values costs
// the cloud a call, for every instance type its provider block may launch.
func NotOffered(ctx context.Context, lister cloudprovider.InstanceTypeLister, p *v1alpha5.Provisioner) (string, error) {
	named := map[string]sets.Set[string]{}
	for _, r := range p.Spec.Requirements {
		operator := corev1.NodeSelectorOperator(r.Operator)
		if operator != corev1.NodeSelectorOpIn && operator != corev1.NodeSelectorOpNotIn {
			continue
		}
		if !slices.ContainsFunc(offeredKeys, func(k struct{ key, noun string }) bool { return k.key == r.Key }) {
			continue
		}
		if named[r.Key] == nil {
			named[r.Key] = sets.New[string]()
		}
		named[r.Key].Insert(r.Values...)
	}
	if len(named) == 0 {
		return "", nil
	}
	types, err := lister.InstanceTypes(ctx, cloudprovider.Constraints{Provider: p.Spec.Provider})
	if err != nil {
		return "", fmt.Errorf("listing the instance types offered, %w", err)
	}
	offered := map[string]sets.Set[string]{corev1.LabelInstanceTypeStable: sets.New[string](), corev1.LabelTopologyZone: sets.New[string]()}
	for _, it := range types {
		offered[corev1.LabelInstanceTypeStable].Insert(it.Name)
		for _, o := range it.Offerings {
			offered[corev1.LabelTopologyZone].Insert(o.Zone)
		}
	}
	var missing []string
	for _, k := range offeredKeys {
		if values := sets.List(named[k.key].Difference(offered[k.key])); len(values) > 0 {
			missing = append(missing, fmt.Sprintf("no %s %s", k.noun, strings.Join(values, ", ")))
		}
	}
	return strings.Join(missing, " and "), nil
}

// markOffered sets the Provisioner's RequirementsOffered condition from NotOffered; it is left
// as it was when the cloud cannot say.
func (c *Controller) markOffered(ctx context.Context, p *poolPlan) {
	notOffered, err := NotOffered(ctx, c.instanceProvider, p.stored)
	switch {
	case err != nil:
		return
	case notOffered != "":
		p.updated.StatusConditions().MarkFalse(v1alpha5.ConditionRequirementsOffered, ReasonValuesNotOffered,
			"the cloud offers this Provisioner %s: misspelt, or not offered in its region or its subnets' zones", notOffered)
	default:
		p.updated.StatusConditions().MarkTrue(v1alpha5.ConditionRequirementsOffered)
	}
}

// recordOffered sends a Warning Event when RequirementsOffered turns False or names other values
// (its message, unlike others, is the same until the spec or the cloud's offer changes), and a
// Normal one when every value is offered again.
func recordOffered(recorder record.EventRecorder, p *poolPlan) {
	before := p.stored.StatusConditions().GetCondition(v1alpha5.ConditionRequirementsOffered)
	after := p.updated.StatusConditions().GetCondition(v1alpha5.ConditionRequirementsOffered)
	switch {
	case after == nil:
	case after.IsFalse() && (before == nil || !before.IsFalse() || before.Message != after.Message):
		recorder.Event(p.updated, corev1.EventTypeWarning, ReasonValuesNotOffered, after.Message)
	case after.IsTrue() && before != nil && before.IsFalse():
		recorder.Event(p.updated, corev1.EventTypeNormal, ReasonValuesOffered, "The cloud offers every instance type and zone the requirements name")
	}
}
