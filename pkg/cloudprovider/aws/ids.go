package aws

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// The type strings AWS implements, as the specs spell them.
const (
	autoScalingGroupType = string(v1alpha1.AWSEC2AutoScalingGroup)
	eksNodeGroupType     = string(v1alpha1.AWSEKSNodeGroup)
	sqsQueueType         = string(v1alpha1.AWSSQSQueueType)
)

// RegisterIDs makes r validate the ids of AWS's types. It needs no provider,
// credentials or region, so the webhook can call it.
func RegisterIDs(r *cloudprovider.Registry) {
	r.RegisterNodeGroupID(autoScalingGroupType, func(id string) error {
		_, err := ParseAutoScalingGroupID(id)
		return err
	})
	r.RegisterNodeGroupID(eksNodeGroupType, func(id string) error {
		_, err := ParseEKSNodeGroupID(id)
		return err
	})
	r.RegisterQueueID(sqsQueueType, func(id string) error {
		_, err := ParseSQSQueueID(id)
		return err
	})
}

// The parsers below do no I/O, so admission webhooks can use them to validate ids.

// AutoScalingGroupID identifies an Auto Scaling group; Region is empty for a bare name.
type AutoScalingGroupID struct {
	Region, Name string
}

// ParseAutoScalingGroupID accepts a group name or its ARN
// (arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>:autoScalingGroupName/<name>).
func ParseAutoScalingGroupID(id string) (AutoScalingGroupID, error) {
	invalid := func(reason string) error {
		return &cloudprovider.InvalidIDError{Type: autoScalingGroupType, ID: id, Reason: reason}
	}
	if !arn.IsARN(id) {
		if reason := autoScalingGroupNameProblem(id); reason != "" {
			return AutoScalingGroupID{}, invalid(reason)
		}
		return AutoScalingGroupID{Name: id}, nil
	}
	a, err := arn.Parse(id)
	if err != nil {
		return AutoScalingGroupID{}, invalid(err.Error())
	}
	rest, isGroup := strings.CutPrefix(a.Resource, "autoScalingGroup:")
	uuid, name, found := strings.Cut(rest, ":autoScalingGroupName/")
	if a.Service != "autoscaling" || !isGroup || !found || uuid == "" || strings.ContainsAny(uuid, ":/") || name == "" {
		return AutoScalingGroupID{}, invalid("expected arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>:autoScalingGroupName/<name>")
	}
	if a.Region == "" {
		return AutoScalingGroupID{}, invalid("the ARN has no region")
	}
	if reason := accountProblem(a.AccountID); reason != "" {
		return AutoScalingGroupID{}, invalid(reason)
	}
	if reason := autoScalingGroupNameProblem(name); reason != "" {
		return AutoScalingGroupID{}, invalid(reason)
	}
	return AutoScalingGroupID{Region: a.Region, Name: name}, nil
}

// autoScalingGroupNameProblem says what is wrong with a group name, "" if nothing.
func autoScalingGroupNameProblem(name string) string {
	if n := utf8.RuneCountInString(name); n == 0 || n > 255 {
		return "a group name has 1 to 255 characters"
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Sprintf("a group name has no control characters, found %U at byte %d", r, i)
	}
	return ""
}

// EKSNodeGroupID identifies an EKS managed node group; Region is empty for cluster/nodegroup.
type EKSNodeGroupID struct {
	Region, Cluster, NodeGroup string
}

// ParseEKSNodeGroupID accepts <cluster>/<nodegroup> or the node group ARN
// (arn:aws:eks:<region>:<account>:nodegroup/<cluster>/<nodegroup>/<uuid>).
func ParseEKSNodeGroupID(id string) (EKSNodeGroupID, error) {
	invalid := func(reason string) error {
		return &cloudprovider.InvalidIDError{Type: eksNodeGroupType, ID: id, Reason: reason}
	}
	if !arn.IsARN(id) {
		parts := strings.Split(id, "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return EKSNodeGroupID{}, invalid("expected <cluster>/<nodegroup> or a node group ARN")
		}
		if reason := eksNamesProblem(parts[0], parts[1]); reason != "" {
			return EKSNodeGroupID{}, invalid(reason)
		}
		return EKSNodeGroupID{Cluster: parts[0], NodeGroup: parts[1]}, nil
	}
	a, err := arn.Parse(id)
	if err != nil {
		return EKSNodeGroupID{}, invalid(err.Error())
	}
	parts := strings.Split(a.Resource, "/")
	if a.Service != "eks" || len(parts) != 4 || parts[0] != "nodegroup" || parts[1] == "" || parts[2] == "" {
		return EKSNodeGroupID{}, invalid("expected arn:aws:eks:<region>:<account>:nodegroup/<cluster>/<nodegroup>/<uuid>")
	}
	if a.Region == "" {
		return EKSNodeGroupID{}, invalid("the ARN has no region")
	}
	if reason := accountProblem(a.AccountID); reason != "" {
		return EKSNodeGroupID{}, invalid(reason)
	}
	if reason := eksNamesProblem(parts[1], parts[2]); reason != "" {
		return EKSNodeGroupID{}, invalid(reason)
	}
	if parts[3] == "" {
		return EKSNodeGroupID{}, invalid("the ARN's node group uuid (after <nodegroup>/) is empty")
	}
	return EKSNodeGroupID{Region: a.Region, Cluster: parts[1], NodeGroup: parts[2]}, nil
}

// eksName is EKS's rule for cluster and node group names (1 to 100 characters).
var eksName = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`)

// eksNamesProblem says what is wrong with a cluster or node group name, "" if nothing.
func eksNamesProblem(cluster, nodeGroup string) string {
	for _, n := range []struct{ kind, name string }{{"cluster", cluster}, {"node group", nodeGroup}} {
		if len(n.name) > 100 || !eksName.MatchString(n.name) {
			return fmt.Sprintf("%s name %q must have 1 to 100 letters, digits, hyphens or underscores and start with a letter or digit", n.kind, n.name)
		}
	}
	return ""
}

// SQSQueueID identifies an SQS queue. URL is set when the id was a URL;
// Region is empty when a URL's host does not name one (e.g. a custom endpoint).
type SQSQueueID struct {
	Region, Account, Name, URL string
}

// ParseSQSQueueID accepts a queue ARN (arn:aws:sqs:<region>:<account>:<name>)
// or URL (https://sqs.<region>.amazonaws.com/<account>/<name>).
func ParseSQSQueueID(id string) (SQSQueueID, error) {
	invalid := func(reason string) error {
		return &cloudprovider.InvalidIDError{Type: sqsQueueType, ID: id, Reason: reason}
	}
	if arn.IsARN(id) {
		a, err := arn.Parse(id)
		if err != nil {
			return SQSQueueID{}, invalid(err.Error())
		}
		if a.Service != "sqs" || a.Region == "" || a.AccountID == "" || a.Resource == "" || strings.ContainsAny(a.Resource, "/:") {
			return SQSQueueID{}, invalid("expected arn:aws:sqs:<region>:<account>:<queue name>")
		}
		if reason := queueProblem(a.AccountID, a.Resource); reason != "" {
			return SQSQueueID{}, invalid(reason)
		}
		return SQSQueueID{Region: a.Region, Account: a.AccountID, Name: a.Resource}, nil
	}
	u, err := url.Parse(id)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return SQSQueueID{}, invalid("expected a queue ARN or an https://sqs.<region>.amazonaws.com/<account>/<name> URL")
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return SQSQueueID{}, invalid("a queue URL's path is /<account>/<queue name>")
	}
	if reason := queueProblem(parts[0], parts[1]); reason != "" {
		return SQSQueueID{}, invalid(reason)
	}
	return SQSQueueID{Region: regionOfQueueHost(u.Hostname()), Account: parts[0], Name: parts[1], URL: id}, nil
}

// sqsQueueName is SQS's rule for queue names; the .fifo suffix counts towards the 80 characters.
var sqsQueueName = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.fifo)?$`)

// queueProblem says what is wrong with a queue's account or name, "" if nothing.
func queueProblem(account, name string) string {
	if reason := accountProblem(account); reason != "" {
		return reason
	}
	if len(name) > 80 || !sqsQueueName.MatchString(name) {
		return fmt.Sprintf("queue name %q must have 1 to 80 letters, digits, hyphens or underscores, a FIFO queue's ending in .fifo", name)
	}
	return ""
}

// awsAccountID is an AWS account id. Real ones have 12 digits; shorter ones are accepted because
// Karpenter v0.1's documented examples used them, and users' manifests must keep applying.
var awsAccountID = regexp.MustCompile(`^[0-9]{1,12}$`)

// accountProblem says what is wrong with an account id, "" if nothing.
func accountProblem(account string) string {
	if !awsAccountID.MatchString(account) {
		return fmt.Sprintf("account %q is not an AWS account id (up to 12 digits)", account)
	}
	return ""
}

// regionOfQueueHost reads the region from sqs.<region>.amazonaws.com[.cn],
// sqs.<region>.api.aws, a VPC endpoint's vpce-<id>.sqs.<region>.vpce.amazonaws.com,
// the legacy <region>.queue.amazonaws.com, or the legacy global queue.amazonaws.com,
// which is us-east-1's.
func regionOfQueueHost(host string) string {
	host = strings.ToLower(host)
	if host == "queue.amazonaws.com" {
		return "us-east-1"
	}
	labels := strings.Split(host, ".")
	switch {
	case len(labels) >= 4 && labels[0] == "sqs":
		return labels[1]
	case len(labels) >= 4 && labels[1] == "queue":
		return labels[0]
	case len(labels) >= 6 && strings.HasPrefix(labels[0], "vpce-") && labels[1] == "sqs" && labels[3] == "vpce":
		return labels[2]
	}
	return ""
}
