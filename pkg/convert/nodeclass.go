package convert

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

// amiAlias selects the AMI the Provisioner's nodes boot: the EKS-optimized Amazon Linux 2023
// AMI EKS recommends for the cluster's Kubernetes version (the one family a Provisioner
// launches, pkg/cloudprovider/aws/ami.go), the same SSM parameter v1's alias reads. latest is
// upstream's choice for a class converted without AMI terms.
const amiAlias = "al2023@latest"

// EC2NodeClass bounds that a provider block has none of.
const (
	maxSelectorTags = 20
	maxTags         = 50
)

// reservedTags are the tag keys v1 sets itself, which the EC2NodeClass CRD refuses beyond those
// the provider block's validation refused already; reservedTagPrefixes the prefixes.
var (
	reservedTags        = []string{"eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", awsv1.LabelNodeClass}
	reservedTagPrefixes = []string{"kubernetes.io/cluster"}
)

// convertNodeClass is the EC2NodeClass of a provider block, defaulted as the controller
// defaults it, named after its Provisioner.
func convertNodeClass(name string, block *aws.ProviderBlock) (*awsv1.EC2NodeClass, []Warning, *apis.FieldError) {
	var errs *apis.FieldError
	if block.LaunchTemplate != "" {
		errs = errs.Also(fieldError("launchTemplate",
			"v1 launches with no launch template of the user's: write what launch template %q holds into the EC2NodeClass — its AMI as amiSelectorTerms (and amiFamily), "+
				"its security groups as securityGroupSelectorTerms, its instance profile as instanceProfile, its user data as userData, its volumes as blockDeviceMappings",
			block.LaunchTemplate))
	}
	errs = errs.Also(selectorTagsError(block.SubnetSelector, "subnetSelector")).Also(selectorTagsError(block.SecurityGroupSelector, "securityGroupSelector"))
	errs = errs.Also(tagsError(block.Tags))
	if errs != nil {
		return nil, nil, errs
	}
	class := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: block.SubnetSelector}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: block.SecurityGroupSelector}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: amiAlias}},
			InstanceProfile:            &block.InstanceProfile,
			Tags:                       block.Tags,
			// The Provisioner's launch templates: IMDSv2 only, hop limit 2 — one more than v1's
			// default, which would cut pods outside the host network off the metadata service.
			MetadataOptions: &awsv1.MetadataOptions{
				HTTPEndpoint:            ptr.To("enabled"),
				HTTPProtocolIPv6:        ptr.To("disabled"),
				HTTPPutResponseHopLimit: ptr.To(int64(2)),
				HTTPTokens:              ptr.To("required"),
			},
		},
	}
	return class, []Warning{{
		Field: "spec.provider",
		Message: fmt.Sprintf("amiSelectorTerms %s selects the AMI the Provisioner's nodes boot, EKS's recommended AL2023 for the cluster's version; v1 also replaces running nodes "+
			"(drift) when EKS publishes a newer one, which the Provisioner never did: pin a release (al2023@v20250101) to choose when nodes move", amiAlias),
	}}, nil
}

// selectorTagsError refuses a selector of more tags than a v1 selector term takes.
func selectorTagsError(selector map[string]string, field string) *apis.FieldError {
	if len(selector) <= maxSelectorTags {
		return nil
	}
	return fieldError(field, "selects by %d tags; a v1 selector term takes at most %d", len(selector), maxSelectorTags)
}

// tagsError refuses the tags v1 reserves, and more tags than an EC2NodeClass takes.
func tagsError(tags map[string]string) *apis.FieldError {
	var errs *apis.FieldError
	if len(tags) > maxTags {
		errs = errs.Also(fieldError("tags", "%d tags; an EC2NodeClass takes at most %d", len(tags), maxTags))
	}
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		reserved := slices.Contains(reservedTags, key) || slices.ContainsFunc(reservedTagPrefixes, func(prefix string) bool { return strings.HasPrefix(key, prefix) })
		if reserved {
			errs = errs.Also(fieldError(fmt.Sprintf("tags[%s]", key), "v1 reserves tag %q: Karpenter sets it on what it launches", key))
		}
	}
	return errs
}
