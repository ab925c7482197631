package v1alpha5

import "knative.dev/pkg/apis"

// The Provisioner's Ready condition has no dependents: it reports whether the spec was
// accepted by the cloud provider (spec.provider is validated there, not by the schema).
var provisionerConditions = apis.NewLivingConditionSet()

// ConditionPricesCurrent is informational, not a dependent of Ready: False while the cloud's
// price APIs fail and the Provisioner's nodes are chosen at older prices (the last read, or
// those built into Karpenter). Launches go on; only their cost-optimality is in doubt.
const ConditionPricesCurrent apis.ConditionType = "PricesCurrent"

// ConditionRequirementsOffered is informational, not a dependent of Ready: False while a value
// spec.requirements names for instance types or zones is one the cloud offers the Provisioner
// nothing of (a misspelt m5.larg, a zone none of its subnets is in), each named in the message.
// The CRD cannot know them; the other values still launch.
const ConditionRequirementsOffered apis.ConditionType = "RequirementsOffered"

// StatusConditions manages the Provisioner's conditions.
func (p *Provisioner) StatusConditions() apis.ConditionManager {
	return provisionerConditions.Manage(&p.Status)
}

// GetConditions implements apis.ConditionsAccessor.
func (s *ProvisionerStatus) GetConditions() apis.Conditions { return s.Conditions }

// SetConditions implements apis.ConditionsAccessor.
func (s *ProvisionerStatus) SetConditions(c apis.Conditions) { s.Conditions = c }
