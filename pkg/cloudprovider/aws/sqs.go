package aws

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// SQSQueue builds the Queue for an SQS queue ARN or URL.
func (p *Provider) SQSQueue(id string) (cloudprovider.Queue, error) {
	parsed, err := ParseSQSQueueID(id)
	if err != nil {
		return nil, err
	}
	c, err := p.clientsFor(parsed.Region)
	if err != nil {
		return nil, err
	}
	return &sqsQueue{sqs: c.SQS, cloudWatch: c.CloudWatch, clock: p.clock, id: parsed, url: parsed.URL}, nil
}

type sqsQueue struct {
	sqs        *sqs.Client
	cloudWatch *cloudwatch.Client
	clock      clock.PassiveClock
	id         SQSQueueID

	mu  sync.Mutex
	url string // resolved once for ARN ids and names
}

// sqsNotFoundCodes are the codes of a missing queue, modern and query-compatible.
var sqsNotFoundCodes = []string{"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"}

func (q *sqsQueue) resource() string { return "sqs queue " + q.id.Name }

func (q *sqsQueue) queueURL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	input := &sqs.GetQueueUrlInput{QueueName: sdkaws.String(q.id.Name)}
	// A queue named without its account (an interruption queue's name) is the caller's.
	if q.id.Account != "" {
		input.QueueOwnerAWSAccountId = sdkaws.String(q.id.Account)
	}
	out, err := q.sqs.GetQueueUrl(ctx, input)
	if err != nil {
		return "", awsapi.CallError(err, "sqs:GetQueueUrl", q.resource(), sqsNotFoundCodes...)
	}
	url := sdkaws.ToString(out.QueueUrl)
	if q.id.Account == "" {
		// A queue named without its account: the URL SQS resolved names it.
		resolved, err := ParseSQSQueueID(url)
		if err != nil {
			return "", fmt.Errorf("reading the account of %s from the URL sqs:GetQueueUrl answered, %w", q.resource(), err)
		}
		q.id.Account = resolved.Account
	}
	q.url = url
	return q.url, nil
}

// ownerAccount is the account the queue belongs to, once queueURL resolved it.
func (q *sqsQueue) ownerAccount() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.id.Account
}

func (q *sqsQueue) Length(ctx context.Context) (int64, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return 0, err
	}
	out, err := q.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       sdkaws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, awsapi.CallError(err, "sqs:GetQueueAttributes", q.resource(), sqsNotFoundCodes...)
	}
	raw, ok := out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]
	if !ok {
		return 0, fmt.Errorf("calling sqs:GetQueueAttributes on %s, ApproximateNumberOfMessages missing from the response", q.resource())
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("calling sqs:GetQueueAttributes on %s, parsing ApproximateNumberOfMessages %q, %w", q.resource(), raw, err)
	}
	return n, nil
}

// SQS publishes queue metrics to CloudWatch every minute, a few minutes late;
// the window reaches back far enough to always hold the latest datapoint.
const (
	oldestAgeWindow = 15 * time.Minute
	oldestAgePeriod = 60 // seconds
)

func (q *sqsQueue) OldestMessageAge(ctx context.Context) (time.Duration, error) {
	now := q.clock.Now()
	out, err := q.cloudWatch.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: sdkaws.Time(now.Add(-oldestAgeWindow)),
		EndTime:   sdkaws.Time(now),
		ScanBy:    cwtypes.ScanByTimestampDescending,
		MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: sdkaws.String("oldest"),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace:  sdkaws.String("AWS/SQS"),
					MetricName: sdkaws.String("ApproximateAgeOfOldestMessage"),
					Dimensions: []cwtypes.Dimension{{Name: sdkaws.String("QueueName"), Value: sdkaws.String(q.id.Name)}},
				},
				Period: sdkaws.Int32(oldestAgePeriod),
				Stat:   sdkaws.String("Maximum"),
			},
		}},
	})
	if err != nil {
		return 0, awsapi.CallError(err, "cloudwatch:GetMetricData", q.resource())
	}
	for _, r := range out.MetricDataResults {
		if sdkaws.ToString(r.Id) == "oldest" && len(r.Values) > 0 {
			// Timestamps are descending: the first value is the latest.
			return time.Duration(r.Values[0] * float64(time.Second)), nil
		}
	}
	return 0, fmt.Errorf("reading ApproximateAgeOfOldestMessage of %s from CloudWatch, %w in the last %s", q.resource(), cloudprovider.ErrNoData, oldestAgeWindow)
}
