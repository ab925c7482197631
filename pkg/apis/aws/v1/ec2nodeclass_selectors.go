package v1

// SubnetSelectorTerm selects subnets by tags or by id.
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id']",rule="has(self.tags) || has(self.id)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term",rule="!(has(self.id) && has(self.tags))"
type SubnetSelectorTerm struct {
	// Tags a subnet must all have; the value "*" matches any value of the key.
	// +kubebuilder:validation:MinProperties:=1
	// +kubebuilder:validation:MaxProperties:=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a subnet (subnet-0123456789abcdef0).
	// +kubebuilder:validation:Pattern:="^subnet-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, by id or by name.
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'name']",rule="has(self.tags) || has(self.id) || has(self.name)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",rule="!(has(self.id) && (has(self.tags) || has(self.name)))"
// +kubebuilder:validation:XValidation:message="'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",rule="!(has(self.name) && (has(self.tags) || has(self.id)))"
type SecurityGroupSelectorTerm struct {
	// Tags a security group must all have; the value "*" matches any value of the key.
	// +kubebuilder:validation:MinProperties:=1
	// +kubebuilder:validation:MaxProperties:=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a security group (sg-0123456789abcdef0).
	// +kubebuilder:validation:Pattern:="^sg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of a security group: its group name, not its Name tag.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by id, or by tags, owner and
// instance match criteria together.
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",rule="has(self.tags) || has(self.id) || has(self.instanceMatchCriteria)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",rule="!(has(self.id) && (has(self.tags) || has(self.ownerID) || has(self.instanceMatchCriteria)))"
type CapacityReservationSelectorTerm struct {
	// Tags a capacity reservation must all have; the value "*" matches any value of the key.
	// +kubebuilder:validation:MinProperties:=1
	// +kubebuilder:validation:MaxProperties:=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a capacity reservation (cr-0123456789abcdef0).
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the account that owns the reservation, for reservations shared with this one.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria selects reservations any matching instance uses (open) or only
	// instances that name them (targeted).
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// PlacementGroupSelector names a placement group by name or by id.
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['name', 'id']",rule="has(self.name) || has(self.id)"
// +kubebuilder:validation:XValidation:message="'name' and 'id' are mutually exclusive",rule="!(has(self.name) && has(self.id))"
type PlacementGroupSelector struct {
	// Name of the placement group.
	// +kubebuilder:validation:MinLength:=1
	// +optional
	Name *string `json:"name,omitempty"`
	// ID of the placement group (pg-0123456789abcdef0).
	// +kubebuilder:validation:Pattern:="^pg-[0-9a-z]+$"
	// +optional
	ID *string `json:"id,omitempty"`
}

// AMISelectorTerm selects AMIs by alias alone, by id alone, or by name, owner, tags and SSM
// parameter together.
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",rule="has(self.tags) || has(self.id) || has(self.name) || has(self.alias) || has(self.ssmParameter)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",rule="!(has(self.id) && (has(self.alias) || has(self.tags) || has(self.name) || has(self.owner)))"
// +kubebuilder:validation:XValidation:message="'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",rule="!(has(self.alias) && (has(self.id) || has(self.tags) || has(self.name) || has(self.owner)))"
type AMISelectorTerm struct {
	// Alias selects the EKS optimized AMI of a family, as family@version: al2, al2023,
	// bottlerocket, windows2019, windows2022 or windows2025, at a release of the family's own
	// versioning (al2023@v20240625, bottlerocket@v1.20.0) or latest. Windows families take
	// only latest. latest moves with each release, replacing nodes (drift); pin in production.
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:message="'alias' is improperly formatted, must match the format 'family@version'",rule="self.matches('^[a-zA-Z0-9]+@.+$')"
	// +kubebuilder:validation:XValidation:message="family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",rule="self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']"
	// +kubebuilder:validation:XValidation:message="windows families may only specify version 'latest'",rule="self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true"
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags an AMI must all have; the value "*" matches any value of the key.
	// +kubebuilder:validation:MinProperties:=1
	// +kubebuilder:validation:MaxProperties:=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of an AMI (ami-0123456789abcdef0).
	// +kubebuilder:validation:Pattern:="^ami-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of an AMI: its name, not its Name tag; may hold the wildcards * and ?.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner of the AMI: an account id, self, amazon or aws-marketplace. Unset with a name,
	// self and amazon.
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter is the name or ARN of an SSM parameter that holds an AMI id.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}
