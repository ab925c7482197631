package aws_test

import (
	"errors"
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

func TestParseAutoScalingGroupID(t *testing.T) {
	tests := []struct {
		id      string
		want    aws.AutoScalingGroupID
		invalid bool
		reason  string // what the error must say, for cases that test a specific rule
	}{
		{id: "workers", want: aws.AutoScalingGroupID{Name: "workers"}},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:4bd6-11e9:autoScalingGroupName/workers", want: aws.AutoScalingGroupID{Region: "eu-west-1", Name: "workers"}},
		{id: "arn:aws-cn:autoscaling:cn-north-1:123456789012:autoScalingGroup:u:autoScalingGroupName/w", want: aws.AutoScalingGroupID{Region: "cn-north-1", Name: "w"}},
		{id: "", invalid: true},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:launchConfiguration:u:launchConfigurationName/lc", invalid: true},
		{id: "arn:aws:eks:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/w", invalid: true},
		{id: "arn:aws:autoscaling::123456789012:autoScalingGroup:u:autoScalingGroupName/w", invalid: true},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/", invalid: true},
		// Names: 1 to 255 characters (not bytes), no control characters.
		{id: "web workers (blue)", want: aws.AutoScalingGroupID{Name: "web workers (blue)"}},
		{id: strings.Repeat("g", 255), want: aws.AutoScalingGroupID{Name: strings.Repeat("g", 255)}},
		{id: strings.Repeat("é", 255), want: aws.AutoScalingGroupID{Name: strings.Repeat("é", 255)}},
		{id: strings.Repeat("g", 256), invalid: true, reason: "a group name has 1 to 255 characters"},
		{id: "workers\n", invalid: true, reason: "a group name has no control characters, found U+000A at byte 7"},
		{id: "work\x00ers", invalid: true, reason: "found U+0000 at byte 4"},
		{id: "workers\u0085", invalid: true, reason: "found U+0085 at byte 7"},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/" + strings.Repeat("g", 256), invalid: true, reason: "a group name has 1 to 255 characters"},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/a\tb", invalid: true, reason: "found U+0009 at byte 1"},
		// ARNs: an account of up to 12 digits and a uuid segment.
		{id: "arn:aws:autoscaling:eu-west-1:1234567890123:autoScalingGroup:u:autoScalingGroupName/w", invalid: true, reason: `account "1234567890123" is not an AWS account id (up to 12 digits)`},
		{id: "arn:aws:autoscaling:eu-west-1::autoScalingGroup:u:autoScalingGroupName/w", invalid: true, reason: `account "" is not an AWS account id (up to 12 digits)`},
		{id: "arn:aws:autoscaling:eu-west-1:1234567890123a:autoScalingGroup:u:autoScalingGroupName/w", invalid: true, reason: `account "1234567890123a"`},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup::autoScalingGroupName/w", invalid: true, reason: "expected arn:aws:autoscaling:"},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroupName/w", invalid: true, reason: "expected arn:aws:autoscaling:"},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:u:x:autoScalingGroupName/w", invalid: true, reason: "expected arn:aws:autoscaling:"},
	}
	for _, tt := range tests {
		got, err := aws.ParseAutoScalingGroupID(tt.id)
		checkParse(t, tt.id, got, tt.want, err, tt.invalid, tt.reason)
	}
}

func TestParseEKSNodeGroupID(t *testing.T) {
	tests := []struct {
		id      string
		want    aws.EKSNodeGroupID
		invalid bool
		reason  string
	}{
		{id: "prod/general", want: aws.EKSNodeGroupID{Cluster: "prod", NodeGroup: "general"}},
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/prod/general/5ec4a9d6-6e5c-4a6b-9b5b-3b2b9b0b2b7e", want: aws.EKSNodeGroupID{Region: "us-east-2", Cluster: "prod", NodeGroup: "general"}},
		{id: "general", invalid: true},
		{id: "prod/general/extra", invalid: true},
		{id: "/general", invalid: true},
		{id: "arn:aws:eks:us-east-2:123456789012:cluster/prod", invalid: true},
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/prod/general", invalid: true},
		// Names: ^[0-9A-Za-z][A-Za-z0-9_-]*$, 1 to 100 characters.
		{id: "0prod_eu-1/General_2-a", want: aws.EKSNodeGroupID{Cluster: "0prod_eu-1", NodeGroup: "General_2-a"}},
		{id: strings.Repeat("c", 100) + "/" + strings.Repeat("n", 100), want: aws.EKSNodeGroupID{Cluster: strings.Repeat("c", 100), NodeGroup: strings.Repeat("n", 100)}},
		{id: "my cluster/general", invalid: true, reason: `cluster name "my cluster" must have 1 to 100 letters, digits, hyphens or underscores and start with a letter or digit`},
		{id: "prod/general.spot", invalid: true, reason: `node group name "general.spot"`},
		{id: "-prod/general", invalid: true, reason: `cluster name "-prod"`},
		{id: "prod/_general", invalid: true, reason: `node group name "_general"`},
		{id: strings.Repeat("c", 101) + "/general", invalid: true, reason: "cluster name"},
		{id: "prod/" + strings.Repeat("n", 101), invalid: true, reason: "node group name"},
		// ARNs: names as above, an account of up to 12 digits and a uuid.
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/my cluster/general/5ec4a9d6", invalid: true, reason: `cluster name "my cluster"`},
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/prod/gen:eral/5ec4a9d6", invalid: true, reason: `node group name "gen:eral"`},
		{id: "arn:aws:eks:us-east-2:1234567890123:nodegroup/prod/general/5ec4a9d6", invalid: true, reason: `account "1234567890123" is not an AWS account id (up to 12 digits)`},
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/prod/general/", invalid: true, reason: "the ARN's node group uuid (after <nodegroup>/) is empty"},
	}
	for _, tt := range tests {
		got, err := aws.ParseEKSNodeGroupID(tt.id)
		checkParse(t, tt.id, got, tt.want, err, tt.invalid, tt.reason)
	}
}

func TestParseSQSQueueID(t *testing.T) {
	tests := []struct {
		id      string
		want    aws.SQSQueueID
		invalid bool
		reason  string
	}{
		{id: "arn:aws:sqs:us-west-2:123456789012:jobs", want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: "jobs"}},
		{id: "https://sqs.us-west-2.amazonaws.com/123456789012/jobs", want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: "jobs", URL: "https://sqs.us-west-2.amazonaws.com/123456789012/jobs"}},
		{id: "https://us-west-2.queue.amazonaws.com/123456789012/jobs", want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: "jobs", URL: "https://us-west-2.queue.amazonaws.com/123456789012/jobs"}},
		{id: "https://queue.amazonaws.com/123456789012/jobs", want: aws.SQSQueueID{Region: "us-east-1", Account: "123456789012", Name: "jobs", URL: "https://queue.amazonaws.com/123456789012/jobs"}},
		{id: "https://vpce-0a1b2c3d4e5f67890-abcdefgh.sqs.eu-central-1.vpce.amazonaws.com/123456789012/jobs", want: aws.SQSQueueID{Region: "eu-central-1", Account: "123456789012", Name: "jobs", URL: "https://vpce-0a1b2c3d4e5f67890-abcdefgh.sqs.eu-central-1.vpce.amazonaws.com/123456789012/jobs"}},
		{id: "https://vpce-0a1b2c3d4e5f67890-abcdefgh-eu-central-1a.sqs.eu-central-1.vpce.amazonaws.com/123456789012/jobs", want: aws.SQSQueueID{Region: "eu-central-1", Account: "123456789012", Name: "jobs", URL: "https://vpce-0a1b2c3d4e5f67890-abcdefgh-eu-central-1a.sqs.eu-central-1.vpce.amazonaws.com/123456789012/jobs"}},
		{id: "https://sqs.ap-southeast-2.api.aws/123456789012/jobs", want: aws.SQSQueueID{Region: "ap-southeast-2", Account: "123456789012", Name: "jobs", URL: "https://sqs.ap-southeast-2.api.aws/123456789012/jobs"}},
		{id: "http://127.0.0.1:4566/123456789012/jobs", want: aws.SQSQueueID{Account: "123456789012", Name: "jobs", URL: "http://127.0.0.1:4566/123456789012/jobs"}},
		{id: "jobs", invalid: true},
		{id: "https://sqs.us-west-2.amazonaws.com/jobs", invalid: true},
		{id: "arn:aws:sqs:us-west-2:123456789012:", invalid: true},
		{id: "arn:aws:sns:us-west-2:123456789012:topic", invalid: true},
		// Names: ^[A-Za-z0-9_-]+(\.fifo)?$, at most 80 characters with the suffix.
		{id: "arn:aws:sqs:us-west-2:123456789012:Jobs_2-eu.fifo", want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: "Jobs_2-eu.fifo"}},
		{id: "arn:aws:sqs:us-west-2:123456789012:" + strings.Repeat("q", 80), want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: strings.Repeat("q", 80)}},
		{id: "arn:aws:sqs:us-west-2:123456789012:" + strings.Repeat("q", 75) + ".fifo", want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: strings.Repeat("q", 75) + ".fifo"}},
		{id: "arn:aws:sqs:us-west-2:123456789012:" + strings.Repeat("q", 81), invalid: true, reason: "queue name"},
		{id: "arn:aws:sqs:us-west-2:123456789012:" + strings.Repeat("q", 76) + ".fifo", invalid: true, reason: "queue name"},
		{id: "arn:aws:sqs:us-west-2:123456789012:my jobs", invalid: true, reason: `queue name "my jobs" must have 1 to 80 letters, digits, hyphens or underscores, a FIFO queue's ending in .fifo`},
		{id: "arn:aws:sqs:us-west-2:123456789012:jobs.fif", invalid: true, reason: `queue name "jobs.fif"`},
		{id: "arn:aws:sqs:us-west-2:123456789012:.fifo", invalid: true, reason: `queue name ".fifo"`},
		{id: "https://sqs.us-west-2.amazonaws.com/123456789012/my%20jobs", invalid: true, reason: `queue name "my jobs"`},
		{id: "https://sqs.us-west-2.amazonaws.com/123456789012/jobs.fifo", want: aws.SQSQueueID{Region: "us-west-2", Account: "123456789012", Name: "jobs.fifo", URL: "https://sqs.us-west-2.amazonaws.com/123456789012/jobs.fifo"}},
		// Accounts: exactly 12 digits.
		{id: "arn:aws:sqs:us-west-2:1234567890123:jobs", invalid: true, reason: `account "1234567890123" is not an AWS account id (up to 12 digits)`},
		{id: "arn:aws:sqs:us-west-2:1234567890123:jobs", invalid: true, reason: `account "1234567890123"`},
		{id: "https://sqs.us-west-2.amazonaws.com/jobs/123456789012", invalid: true, reason: `account "jobs" is not an AWS account id (up to 12 digits)`},
		{id: "https://sqs.us-west-2.amazonaws.com/1234567890123x/jobs", invalid: true, reason: `account "1234567890123x"`},
	}
	for _, tt := range tests {
		got, err := aws.ParseSQSQueueID(tt.id)
		checkParse(t, tt.id, got, tt.want, err, tt.invalid, tt.reason)
	}
}

// checkParse compares a parse's result; an invalid id must fail with *InvalidIDError
// whose message contains reason.
func checkParse[T comparable](t *testing.T, id string, got, want T, err error, invalid bool, reason string) {
	t.Helper()
	if invalid {
		var bad *cloudprovider.InvalidIDError
		if !errors.As(err, &bad) {
			t.Errorf("parse(%q) = %+v, %v; want *InvalidIDError", id, got, err)
		} else if !strings.Contains(bad.Reason, reason) {
			t.Errorf("parse(%q) failed with %q; want a reason containing %q", id, bad.Reason, reason)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("parse(%q) = %+v, %v; want %+v", id, got, err, want)
	}
}
