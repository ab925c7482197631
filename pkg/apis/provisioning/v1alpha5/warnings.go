package v1alpha5

// Warning is a setting that is admitted, since Karpenter v0.5 accepted it and its manifests
// apply unchanged, but that likely does not do what its author meant. The webhook returns each
// as an admission warning, which kubectl prints, and the controller sends each as a Warning
// Event on the Provisioner, for whoever reads its Events later or applied it while the webhook
// was down.
// +kubebuilder:object:generate=false
type Warning struct {
	// Field is the setting's path under spec, e.g. ttlSecondsUntilExpired.
	Field string
	// Reason names the warning in Events.
	Reason string
	// Message says what the setting does.
	Message string
}

// Reasons of the Warning Events of Warnings, documented in docs/node-lifecycle.md.
const (
	ReasonZeroTTLUntilExpired            = "ZeroTTLUntilExpired"
	ReasonTTLAfterEmptyWithConsolidation = "TTLAfterEmptyWithConsolidation"
)

// Warnings are the Provisioner's settings that are admitted but likely not meant; none for
// most.
func (p *Provisioner) Warnings() []Warning {
	var warnings []Warning
	if ttl := p.Spec.TTLSecondsUntilExpired; ttl != nil && *ttl == 0 {
		warnings = append(warnings, Warning{
			Field:  "ttlSecondsUntilExpired",
			Reason: ReasonZeroTTLUntilExpired,
			Message: "ttlSecondsUntilExpired is 0: every node of this Provisioner expires as soon as it is launched, " +
				"and is replaced, one node at a time, for as long as the field is 0. " +
				"Remove the field for nodes that never expire, or set the age at which to replace them",
		})
	}
	if p.Spec.TTLSecondsAfterEmpty != nil && p.ConsolidationEnabled() {
		warnings = append(warnings, Warning{
			Field:  "ttlSecondsAfterEmpty",
			Reason: ReasonTTLAfterEmptyWithConsolidation,
			Message: "ttlSecondsAfterEmpty is set with consolidation.enabled: consolidation decides on this Provisioner's empty nodes too, " +
				"and ttlSecondsAfterEmpty is not applied (Karpenter v0.15 and later refuse the pair). " +
				"Remove ttlSecondsAfterEmpty, or turn consolidation off to have empty nodes deleted after it",
		})
	}
	return warnings
}
