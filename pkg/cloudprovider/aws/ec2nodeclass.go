package aws

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/instance"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// EC2NodeClass fields the causes of failed launches for a NodePool are about.
const (
	fieldSubnetSelectorTerms        = "spec.subnetSelectorTerms"
	fieldSecurityGroupSelectorTerms = "spec.securityGroupSelectorTerms"
	fieldAMISelectorTerms           = "spec.amiSelectorTerms"
	fieldAMIFamily                  = "spec.amiFamily"
	fieldRole                       = "spec.role"
	fieldClassInstanceProfile       = "spec.instanceProfile"
)

// ec2NodeClass is the NodePool's node class, nil for a Provisioner (no node class).
func ec2NodeClass(nodeClass runtime.Object) (*awsv1.EC2NodeClass, error) {
	if nodeClass == nil {
		return nil, nil
	}
	class, ok := nodeClass.(*awsv1.EC2NodeClass)
	if !ok {
		return nil, fmt.Errorf("AWS launches from a karpenter.k8s.aws/v1 EC2NodeClass, not a %T", nodeClass)
	}
	if class == nil {
		// A NodePool must not launch as a Provisioner with the default provider block would.
		return nil, errors.New("the NodePool's EC2NodeClass is nil")
	}
	return class, nil
}

// classSubnets are the subnets of the class's status; none is the class's subnet selector's to
// fix. EC2NodeClass status does not keep the free addresses, so each zone launches into its
// first subnet.
func classSubnets(class *awsv1.EC2NodeClass) ([]subnet.Subnet, error) {
	if len(class.Status.Subnets) == 0 {
		return nil, missingInStatus(class, cloudprovider.ReasonInvalidSubnet, fieldSubnetSelectorTerms, "subnets")
	}
	var subnets []subnet.Subnet
	for _, s := range class.Status.Subnets {
		subnets = append(subnets, subnet.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
	}
	return subnets, nil
}

// classNodeClass is what the class's instances launch from, its status only: the selectors are
// the class controller's to resolve. What the status lacks is the user's to fix.
func classNodeClass(class *awsv1.EC2NodeClass) (instance.NodeClass, error) {
	subnets, err := classSubnets(class)
	if err != nil {
		return instance.NodeClass{}, err
	}
	switch {
	case len(class.Status.SecurityGroups) == 0:
		return instance.NodeClass{}, missingInStatus(class, cloudprovider.ReasonInvalidSecurityGroup, fieldSecurityGroupSelectorTerms, "security groups")
	case len(class.Status.AMIs) == 0:
		return instance.NodeClass{}, missingInStatus(class, cloudprovider.ReasonInvalidAMI, fieldAMISelectorTerms, "AMIs")
	case class.Status.InstanceProfile == "":
		return instance.NodeClass{}, missingInStatus(class, cloudprovider.ReasonInvalidInstanceProfile, instanceProfileField(class), "instance profile")
	}
	return instance.NodeClass{
		Subnets:         subnets,
		InstanceProfile: class.Status.InstanceProfile,
		Tags:            class.Spec.Tags,
		EC2NodeClass:    class,
	}, nil
}

// missingInStatus is the error of a class whose status lacks what a launch needs: the user's to
// fix, at the field that resolves it.
func missingInStatus(class *awsv1.EC2NodeClass, reason, field, what string) error {
	return &cloudprovider.ActionRequiredError{Reason: reason, Field: field, Err: fmt.Errorf("EC2NodeClass %s has no %s in its status", class.Name, what)}
}

// familyField is the class's field its AMI family comes from.
func familyField(class *awsv1.EC2NodeClass) string {
	if class.Spec.AMIFamily != nil {
		return fieldAMIFamily
	}
	return fieldAMISelectorTerms
}

// instanceProfileField is the class's field its instance profile comes from.
func instanceProfileField(class *awsv1.EC2NodeClass) string {
	if class.Spec.InstanceProfile != nil {
		return fieldClassInstanceProfile
	}
	return fieldRole
}

// classError is a launch's error as the class's user must read it: an error only the user can
// fix names the class's field that causes it.
func classError(class *awsv1.EC2NodeClass, err error) error {
	var unsupported *amifamily.UnsupportedFamilyError
	if errors.As(err, &unsupported) {
		return &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonInvalidAMI, Field: familyField(class), Err: err}
	}
	var required *cloudprovider.ActionRequiredError
	if errors.As(err, &required) && required.Field == "" {
		// The error is this launch's own, so it is completed in place.
		switch required.Reason {
		case cloudprovider.ReasonInvalidInstanceProfile:
			required.Field = instanceProfileField(class)
		case cloudprovider.ReasonInvalidSubnet:
			required.Field = fieldSubnetSelectorTerms
		case cloudprovider.ReasonInvalidSecurityGroup:
			required.Field = fieldSecurityGroupSelectorTerms
		case cloudprovider.ReasonInvalidAMI:
			required.Field = fieldAMISelectorTerms
		}
	}
	return err
}

// bootable are the instance types some AMI of the class's status boots; none for a class of a
// family Karpenter renders no user data for, which is told.
func bootable(class *awsv1.EC2NodeClass, instanceTypes []*cloudprovider.InstanceType) ([]*cloudprovider.InstanceType, error) {
	if err := amifamily.Rendered(amifamily.Family(class)); err != nil {
		return nil, classError(class, err)
	}
	if len(class.Status.AMIs) == 0 {
		return nil, missingInStatus(class, cloudprovider.ReasonInvalidAMI, fieldAMISelectorTerms, "AMIs")
	}
	amis, err := launchtemplate.AMIsOf(class)
	if err != nil {
		return nil, err
	}
	var out []*cloudprovider.InstanceType
	for _, it := range instanceTypes {
		if _, ok := amis.For(it); ok {
			out = append(out, it)
		}
	}
	return out, nil
}
