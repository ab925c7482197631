package nodeclass

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

// terms are a class's selector terms, printed for conditions as [term or term].
type terms []selector.Term

func (t terms) String() string { return "[" + selector.Key(t) + "]" }

func subnetTerms(class *awsv1.EC2NodeClass) terms {
	out := make(terms, 0, len(class.Spec.SubnetSelectorTerms))
	for _, t := range class.Spec.SubnetSelectorTerms {
		out = append(out, selector.Term{Tags: t.Tags, ID: t.ID})
	}
	return out
}

func securityGroupTerms(class *awsv1.EC2NodeClass) terms {
	out := make(terms, 0, len(class.Spec.SecurityGroupSelectorTerms))
	for _, t := range class.Spec.SecurityGroupSelectorTerms {
		out = append(out, selector.Term{Tags: t.Tags, ID: t.ID, Name: t.Name})
	}
	return out
}

// alias is the class's AMI alias, "" when its terms select AMIs otherwise; the schema admits an
// alias only as the one term.
func alias(class *awsv1.EC2NodeClass) string {
	for _, t := range class.Spec.AMISelectorTerms {
		if t.Alias != "" {
			return t.Alias
		}
	}
	return ""
}

// amiTermsString prints the class's AMI terms for conditions.
func amiTermsString(class *awsv1.EC2NodeClass) string {
	if a := alias(class); a != "" {
		return "[alias=" + a + "]"
	}
	var out []string
	for _, t := range class.Spec.AMISelectorTerms {
		s := selector.Term{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner}.String()
		if t.SSMParameter != "" {
			s = "ssmParameter=" + t.SSMParameter + "," + s
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, " or ") + "]"
}

// windows says the class's nodes run Windows: its alias's or amiFamily's family is Windows.
func windows(class *awsv1.EC2NodeClass) bool {
	if a := alias(class); a != "" {
		return strings.HasPrefix(a, "windows")
	}
	return class.Spec.AMIFamily != nil && strings.HasPrefix(*class.Spec.AMIFamily, "Windows")
}

// statusAMIs are the AMIs launches choose from: the newest of each architecture and variant
// (amis come newest first), each with the requirements of the instance types it boots. An
// alias's standard AMI boots instance types without GPUs or accelerators when the family has a
// variant for them, which boots those.
func statusAMIs(amis []amifamily.AMI, windows bool) []awsv1.AMI {
	hasVariants := slices.ContainsFunc(amis, func(a amifamily.AMI) bool { return a.Variant != amifamily.VariantStandard })
	var out []awsv1.AMI
	seen := map[[2]string]bool{}
	for _, ami := range amis {
		key := [2]string{ami.Architecture, ami.Variant}
		if ami.Architecture == "" || seen[key] {
			continue
		}
		seen[key] = true
		requirements := []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{ami.Architecture}}}
		switch {
		case ami.Variant == amifamily.VariantNVIDIA:
			requirements = append(requirements, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists})
		case ami.Variant == amifamily.VariantNeuron:
			requirements = append(requirements, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists})
		case hasVariants:
			requirements = append(requirements,
				corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
				corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist})
		}
		if windows {
			requirements = append(requirements, corev1.NodeSelectorRequirement{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}})
		}
		out = append(out, awsv1.AMI{ID: ami.ID, Name: ami.Name, Requirements: requirements})
	}
	return out
}
