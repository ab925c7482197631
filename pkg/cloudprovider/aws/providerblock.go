package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

// ProviderBlock is a Provisioner's spec.provider on AWS, with exactly the fields of
// Karpenter v0.5's contract.
type ProviderBlock struct {
	// InstanceProfile is the IAM instance profile the nodes run as.
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// LaunchTemplate names a launch template of the user's, used as given: it carries the
	// AMI, the security groups, the instance profile and the user data.
	LaunchTemplate string `json:"launchTemplate,omitempty"`
	// SubnetSelector selects the subnets instances launch into by tag; the value "*" matches
	// any value of the key.
	SubnetSelector map[string]string `json:"subnetSelector,omitempty"`
	// SecurityGroupSelector selects the nodes' security groups by tag, as SubnetSelector does.
	SecurityGroupSelector map[string]string `json:"securityGroupSelector,omitempty"`
	// Tags are added to every instance.
	Tags map[string]string `json:"tags,omitempty"`
}

// reservedTagPrefixes are the tag keys Karpenter sets itself: a user's tag could make another
// cluster's or Provisioner's instance look like this one's.
var reservedTagPrefixes = []string{"karpenter.sh/", "kubernetes.io/cluster/"}

// EC2's rules on the tags CreateFleet puts on instances: a request breaking one fails whole,
// so a Provisioner's tags that break one would fail every launch.
const (
	// awsTagPrefix begins the tag keys AWS reserves for itself, in any case.
	awsTagPrefix      = "aws:"
	maxTagKeyLength   = 127
	maxTagValueLength = 256
)

// ProviderDefaults are what DefaultProvider fills in.
type ProviderDefaults struct {
	// ClusterName makes the default selectors kubernetes.io/cluster/<ClusterName>: "*".
	ClusterName string
	// InstanceProfile is the instance profile of blocks that name none.
	InstanceProfile string
}

// ProviderBlockValidator defaults and validates AWS provider blocks without I/O, for the
// webhook and the controller alike.
type ProviderBlockValidator struct {
	Defaults ProviderDefaults
}

// ParseProviderBlock decodes a block strictly: a field the contract does not have is an error.
// A nil block is the empty one.
func ParseProviderBlock(provider *runtime.RawExtension) (*ProviderBlock, error) {
	block := &ProviderBlock{}
	if provider == nil || len(provider.Raw) == 0 {
		return block, nil
	}
	decoder := json.NewDecoder(strings.NewReader(string(provider.Raw)))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(block); err != nil {
		return nil, fmt.Errorf("decoding the AWS provider block, %w", err)
	}
	return block, nil
}

// clusterSelector selects what is tagged as the cluster's.
func clusterSelector(clusterName string) map[string]string {
	return map[string]string{awsapi.ClusterTagKey(clusterName): selector.AnyValue}
}

func (v ProviderBlockValidator) DefaultProvider(_ context.Context, provider *runtime.RawExtension) *runtime.RawExtension {
	block, err := ParseProviderBlock(provider)
	if err != nil {
		return provider
	}
	changed := false
	if block.InstanceProfile == "" && block.LaunchTemplate == "" && v.Defaults.InstanceProfile != "" {
		block.InstanceProfile, changed = v.Defaults.InstanceProfile, true
	}
	if v.Defaults.ClusterName != "" {
		if len(block.SubnetSelector) == 0 {
			block.SubnetSelector, changed = clusterSelector(v.Defaults.ClusterName), true
		}
		// A launch template carries its own security groups.
		if len(block.SecurityGroupSelector) == 0 && block.LaunchTemplate == "" {
			block.SecurityGroupSelector, changed = clusterSelector(v.Defaults.ClusterName), true
		}
	}
	if !changed {
		return provider
	}
	raw, err := json.Marshal(block)
	if err != nil {
		return provider
	}
	return &runtime.RawExtension{Raw: raw}
}

// ValidateProvider names each unknown field, each value of the wrong type, reserved and empty
// tag keys, tags EC2 refuses, empty selectors and selector keys or values, and a launch
// template given with a security group selector.
func (v ProviderBlockValidator) ValidateProvider(_ context.Context, provider *runtime.RawExtension) *apis.FieldError {
	if provider == nil || len(provider.Raw) == 0 {
		return v.validateBlock(&ProviderBlock{})
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(provider.Raw, &fields); err != nil {
		return &apis.FieldError{Message: fmt.Sprintf("must be an object: %v", err), Paths: []string{apis.CurrentField}}
	}
	var errs *apis.FieldError
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		var target any
		switch name {
		case "instanceProfile", "launchTemplate":
			target = new(string)
		case "subnetSelector", "securityGroupSelector", "tags":
			target = new(map[string]string)
		default:
			errs = errs.Also(apis.ErrDisallowedFields(name))
			continue
		}
		if err := json.Unmarshal(fields[name], target); err != nil {
			errs = errs.Also(apis.ErrInvalidValue(string(fields[name]), name, err.Error()))
		}
	}
	if errs != nil {
		return errs
	}
	block, err := ParseProviderBlock(provider)
	if err != nil {
		return &apis.FieldError{Message: err.Error(), Paths: []string{apis.CurrentField}}
	}
	return v.validateBlock(block)
}

func (v ProviderBlockValidator) validateBlock(block *ProviderBlock) *apis.FieldError {
	var errs *apis.FieldError
	if block.LaunchTemplate != "" && block.SecurityGroupSelector != nil {
		errs = errs.Also(&apis.FieldError{
			Message: "expected exactly one, got both: the launch template carries the security groups",
			Paths:   []string{"launchTemplate", "securityGroupSelector"},
		})
	}
	if block.InstanceProfile == "" && block.LaunchTemplate == "" && v.Defaults.InstanceProfile == "" {
		errs = errs.Also(&apis.FieldError{
			Message: "required: no launchTemplate names one, and the controller has no default instance profile",
			Paths:   []string{"instanceProfile"},
		})
	}
	if block.SubnetSelector == nil && v.Defaults.ClusterName == "" {
		errs = errs.Also(apis.ErrMissingField("subnetSelector"))
	}
	if block.SecurityGroupSelector == nil && block.LaunchTemplate == "" && v.Defaults.ClusterName == "" {
		errs = errs.Also(apis.ErrMissingField("securityGroupSelector"))
	}
	errs = errs.Also(validateSelector(block.SubnetSelector, "subnetSelector"))
	errs = errs.Also(validateSelector(block.SecurityGroupSelector, "securityGroupSelector"))
	for _, key := range slices.Sorted(maps.Keys(block.Tags)) {
		if key == "" {
			errs = errs.Also(keyError(key, "tags", "tag keys must not be empty"))
			continue
		}
		for _, prefix := range reservedTagPrefixes {
			if strings.HasPrefix(key, prefix) {
				errs = errs.Also(keyError(key, "tags", fmt.Sprintf("tag keys under %s are reserved for Karpenter", prefix)))
			}
		}
		if len(key) >= len(awsTagPrefix) && strings.EqualFold(key[:len(awsTagPrefix)], awsTagPrefix) {
			errs = errs.Also(keyError(key, "tags", "tag keys beginning with aws: are reserved for AWS, and EC2 refuses them"))
		}
		if utf8.RuneCountInString(key) > maxTagKeyLength {
			errs = errs.Also(keyError(key, "tags", fmt.Sprintf("tag keys are at most %d characters long on EC2", maxTagKeyLength)))
		}
		if utf8.RuneCountInString(block.Tags[key]) > maxTagValueLength {
			errs = errs.Also(&apis.FieldError{
				Message: fmt.Sprintf("tag values are at most %d characters long on EC2", maxTagValueLength),
				Paths:   []string{fmt.Sprintf("tags[%s]", key)},
			})
		}
	}
	return errs
}

// validateSelector rejects a selector that is present but empty, which would select every
// resource of the account, and empty keys and values.
func validateSelector(tags map[string]string, field string) *apis.FieldError {
	if tags == nil {
		return nil
	}
	if len(tags) == 0 {
		return &apis.FieldError{Message: "must select by at least one tag", Paths: []string{field}}
	}
	var errs *apis.FieldError
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		if key == "" {
			errs = errs.Also(keyError(key, field, "tag keys must not be empty"))
			continue
		}
		if tags[key] == "" {
			errs = errs.Also(apis.ErrInvalidValue("", apis.CurrentField, fmt.Sprintf("must be a tag value or %q for any", selector.AnyValue)).ViaKey(key).ViaField(field))
		}
	}
	return errs
}

// keyError is an error about one key of a map field, with the key in its path (tags[key]).
func keyError(key, field, message string) *apis.FieldError {
	return &apis.FieldError{Message: fmt.Sprintf("invalid key %q: %s", key, message), Paths: []string{fmt.Sprintf("%s[%s]", field, key)}}
}

// RegisterProvider makes r default and validate Provisioners' provider blocks with the AWS rules.
// It needs no credentials, so the webhook registers it as the controller does.
func RegisterProvider(r *cloudprovider.Registry, defaults ProviderDefaults) {
	r.RegisterProvider(ProviderBlockValidator{Defaults: defaults})
}
