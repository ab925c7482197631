package nodeclass

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
)

// Reasons of the class's conditions.
const (
	ReasonResolved                = "Resolved"
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMINotFound             = "AMINotFound"
	ReasonAMIAliasUnsupported     = "AMIAliasUnsupported"
	ReasonRoleNotFound            = "RoleNotFound"
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	ReasonAccessDenied            = "AccessDenied"
	ReasonResolutionFailed        = "ResolutionFailed"
	ReasonValid                   = "Valid"
	ReasonFieldsNotActedOn        = "FieldsNotActedOn"
	ReasonReady                   = "Ready"
)

// Resolution is what AWS answered for a class: each concern's resolved objects, or the error
// of its calls. A concern whose error is set keeps the stored status.
type Resolution struct {
	Subnets            []awsv1.Subnet
	SubnetsErr         error
	SecurityGroups     []awsv1.SecurityGroup
	SecurityGroupsErr  error
	AMIs               []awsv1.AMI
	AMIsErr            error
	InstanceProfile    string
	InstanceProfileErr error
}

// readyConditions are the conditions Ready waits on, in the order its reason is taken from.
var readyConditions = []string{
	awsv1.ConditionTypeValidationSucceeded,
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeInstanceProfileReady,
}

// Decide is the class's status given what AWS answered: the resolved subnets, security groups,
// AMIs and instance profile, each concern's condition (False naming the selector when nothing
// matched), ValidationSucceeded (False naming the fields the class sets that Karpenter does not
// act on yet) and Ready, True once all of them are. A concern AWS failed to answer keeps its
// stored objects, and its condition when that was True: a throttled call does not stop
// launches. Transition times are now's only where a condition changes.
func Decide(class *awsv1.EC2NodeClass, r Resolution, now time.Time) awsv1.EC2NodeClassStatus {
	status := *class.Status.DeepCopy()
	set := func(conditionType string, ok bool, reason, message string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: conditionType, Status: s, Reason: reason, Message: message,
			ObservedGeneration: class.Generation, LastTransitionTime: metav1.NewTime(now),
		})
	}
	failed := func(conditionType string, err error) {
		if meta.IsStatusConditionTrue(status.Conditions, conditionType) {
			return
		}
		set(conditionType, false, errorReason(err, ReasonResolutionFailed), err.Error())
	}

	if notActedOn := fieldsNotActedOn(class); len(notActedOn) > 0 {
		set(awsv1.ConditionTypeValidationSucceeded, false, ReasonFieldsNotActedOn, fmt.Sprintf(
			"%s: accepted but not acted on yet by this Karpenter; remove them, or nodes would launch without them", strings.Join(notActedOn, ", ")))
	} else {
		set(awsv1.ConditionTypeValidationSucceeded, true, ReasonValid, "")
	}

	switch {
	case r.SubnetsErr != nil:
		failed(awsv1.ConditionTypeSubnetsReady, r.SubnetsErr)
	case len(r.Subnets) == 0:
		status.Subnets = nil
		set(awsv1.ConditionTypeSubnetsReady, false, ReasonSubnetsNotFound, "no subnet matches subnetSelectorTerms "+subnetTerms(class).String())
	default:
		status.Subnets = r.Subnets
		set(awsv1.ConditionTypeSubnetsReady, true, ReasonResolved, "")
	}

	switch {
	case r.SecurityGroupsErr != nil:
		failed(awsv1.ConditionTypeSecurityGroupsReady, r.SecurityGroupsErr)
	case len(r.SecurityGroups) == 0:
		status.SecurityGroups = nil
		set(awsv1.ConditionTypeSecurityGroupsReady, false, ReasonSecurityGroupsNotFound, "no security group matches securityGroupSelectorTerms "+securityGroupTerms(class).String())
	default:
		status.SecurityGroups = r.SecurityGroups
		set(awsv1.ConditionTypeSecurityGroupsReady, true, ReasonResolved, "")
	}

	var unsupported *amifamily.UnsupportedAliasError
	switch {
	case errors.As(r.AMIsErr, &unsupported):
		status.AMIs = nil
		set(awsv1.ConditionTypeAMIsReady, false, ReasonAMIAliasUnsupported, r.AMIsErr.Error())
	case r.AMIsErr != nil:
		failed(awsv1.ConditionTypeAMIsReady, r.AMIsErr)
	case len(r.AMIs) == 0:
		status.AMIs = nil
		set(awsv1.ConditionTypeAMIsReady, false, ReasonAMINotFound, "no AMI of an architecture nodes run (amd64, arm64) matches amiSelectorTerms "+amiTermsString(class))
	default:
		status.AMIs = r.AMIs
		set(awsv1.ConditionTypeAMIsReady, true, ReasonResolved, "")
	}

	if r.InstanceProfileErr != nil {
		notFound := ReasonInstanceProfileNotFound
		if class.Spec.Role != "" {
			notFound = ReasonRoleNotFound
		}
		if errorReason(r.InstanceProfileErr, "") == notFoundReason {
			status.InstanceProfile = ""
			set(awsv1.ConditionTypeInstanceProfileReady, false, notFound, r.InstanceProfileErr.Error())
		} else {
			failed(awsv1.ConditionTypeInstanceProfileReady, r.InstanceProfileErr)
		}
	} else {
		status.InstanceProfile = r.InstanceProfile
		set(awsv1.ConditionTypeInstanceProfileReady, true, ReasonResolved, "")
	}

	for _, conditionType := range readyConditions {
		if c := meta.FindStatusCondition(status.Conditions, conditionType); c == nil || c.Status != metav1.ConditionTrue {
			reason, message := ReasonResolutionFailed, conditionType+" has not been decided"
			if c != nil {
				reason, message = c.Reason, conditionType+": "+c.Message
			}
			set(awsv1.ConditionTypeReady, false, reason, message)
			return status
		}
	}
	set(awsv1.ConditionTypeReady, true, ReasonReady, "")
	return status
}

// notFoundReason marks a missing resource in errorReason's answer.
const notFoundReason = "NotFound"

// errorReason is the reason a failed call gives a condition: AccessDenied, NotFound, or
// fallback.
func errorReason(err error, fallback string) string {
	var denied *cloudprovider.AccessDeniedError
	var notFound *cloudprovider.NotFoundError
	switch {
	case errors.As(err, &denied):
		return ReasonAccessDenied
	case errors.As(err, &notFound):
		return notFoundReason
	}
	return fallback
}

// fieldsNotActedOn are the fields the class sets that the schema accepts (as upstream's does)
// but this Karpenter does not act on yet: launching without them would ignore what the user
// asked for, so the class is not Ready while it sets them.
func fieldsNotActedOn(class *awsv1.EC2NodeClass) []string {
	spec := class.Spec
	var fields []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"spec.capacityReservationSelectorTerms", len(spec.CapacityReservationSelectorTerms) > 0},
		{"spec.placementGroupSelector", spec.PlacementGroupSelector != nil},
		{"spec.ipPrefixCount", spec.IPPrefixCount != nil},
		{"spec.networkInterfaces", len(spec.NetworkInterfaces) > 0},
		{"spec.connectionTracking", spec.ConnectionTracking != nil},
		{"spec.context", spec.Context != nil},
		{"spec.cpuOptions", spec.CPUOptions != nil},
	} {
		if f.set {
			fields = append(fields, f.name)
		}
	}
	return fields
}
