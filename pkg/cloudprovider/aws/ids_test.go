package aws_test

import (
	"errors"
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

func TestParseAutoScalingGroupID(t *testing.T) {
	tests := []struct {
		id      string
		want    aws.AutoScalingGroupID
		invalid bool
	}{
		{id: "workers", want: aws.AutoScalingGroupID{Name: "workers"}},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:4bd6-11e9:autoScalingGroupName/workers", want: aws.AutoScalingGroupID{Region: "eu-west-1", Name: "workers"}},
		{id: "arn:aws-cn:autoscaling:cn-north-1:123456789012:autoScalingGroup:u:autoScalingGroupName/w", want: aws.AutoScalingGroupID{Region: "cn-north-1", Name: "w"}},
		{id: "", invalid: true},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:launchConfiguration:u:launchConfigurationName/lc", invalid: true},
		{id: "arn:aws:eks:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/w", invalid: true},
		{id: "arn:aws:autoscaling::123456789012:autoScalingGroup:u:autoScalingGroupName/w", invalid: true},
		{id: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/", invalid: true},
	}
	for _, tt := range tests {
		got, err := aws.ParseAutoScalingGroupID(tt.id)
		checkParse(t, tt.id, got, tt.want, err, tt.invalid)
	}
}

func TestParseEKSNodeGroupID(t *testing.T) {
	tests := []struct {
		id      string
		want    aws.EKSNodeGroupID
		invalid bool
	}{
		{id: "prod/general", want: aws.EKSNodeGroupID{Cluster: "prod", NodeGroup: "general"}},
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/prod/general/5ec4a9d6-6e5c-4a6b-9b5b-3b2b9b0b2b7e", want: aws.EKSNodeGroupID{Region: "us-east-2", Cluster: "prod", NodeGroup: "general"}},
		{id: "general", invalid: true},
		{id: "prod/general/extra", invalid: true},
		{id: "/general", invalid: true},
		{id: "arn:aws:eks:us-east-2:123456789012:cluster/prod", invalid: true},
		{id: "arn:aws:eks:us-east-2:123456789012:nodegroup/prod/general", invalid: true},
	}
	for _, tt := range tests {
		got, err := aws.ParseEKSNodeGroupID(tt.id)
		checkParse(t, tt.id, got, tt.want, err, tt.invalid)
	}
}

func TestParseSQSQueueID(t *testing.T) {
	tests := []struct {
		id      string
		want    aws.SQSQueueID
		invalid bool
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
	}
	for _, tt := range tests {
		got, err := aws.ParseSQSQueueID(tt.id)
		checkParse(t, tt.id, got, tt.want, err, tt.invalid)
	}
}

func checkParse[T comparable](t *testing.T, id string, got, want T, err error, invalid bool) {
	t.Helper()
	if invalid {
		var bad *cloudprovider.InvalidIDError
		if !errors.As(err, &bad) {
			t.Errorf("parse(%q) = %+v, %v; want *InvalidIDError", id, got, err)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("parse(%q) = %+v, %v; want %+v", id, got, err, want)
	}
}
