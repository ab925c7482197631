package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// The EventBridge detail types an interruption queue receives (docs/aws.md has the rules).
const (
	detailTypeSpotInterruption = "EC2 Spot Instance Interruption Warning"
	detailTypeRebalance        = "EC2 Instance Rebalance Recommendation"
	detailTypeStateChange      = "EC2 Instance State-change Notification"
	detailTypeHealth           = "AWS Health Event"
)

// Receive's longest wait and its batch: SQS's maximums, so that an idle queue costs few calls
// and a burst of interruptions is read ten at a time.
const (
	maxInterruptionWaitSeconds = 20
	interruptionBatch          = 10
)

// interruptionWaitSeconds is the long poll's wait: SQS's longest, within half the call
// timeout so that an idle wait never fails as a call that took too long, and at least a
// second so that an idle queue is not polled in a tight loop.
func interruptionWaitSeconds(callTimeout time.Duration) int32 {
	wait := max(time.Second, min(maxInterruptionWaitSeconds*time.Second, callTimeout/2))
	return int32(wait / time.Second) //nolint:gosec // G115: clamped to [1, 20] above.
}

// interruptingStates are the instance states that take a node away; pending and running
// are not interruptions.
var interruptingStates = map[string]bool{"stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

var ec2InstanceID = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// eventBridgeEvent is the envelope EventBridge delivers to an SQS target.
type eventBridgeEvent struct {
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	// Account is the account the event was emitted in; EventBridge sets it, a sender cannot.
	Account string          `json:"account"`
	Time    time.Time       `json:"time"`
	Detail  json.RawMessage `json:"detail"`
}

// ec2Detail is the detail of the EC2 events: spot interruption, rebalance, state change.
type ec2Detail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

// healthDetail is the part of an AWS Health event's detail that names EC2 instances.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	// StartTime is when the change starts, in RFC 1123 ("Sat, 05 Jun 2021 15:10:09 GMT").
	StartTime        string `json:"startTime"`
	AffectedEntities []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// ParseInterruptionMessage reads an EventBridge event delivered to an SQS queue of
// queueAccount. A body that is not one of the events an interruption queue is for comes back
// as InterruptionUnknown with Err saying why. An event emitted in another account, or naming
// none, comes back with Refused saying so: the queue's policy may let another account's rules
// send to it (docs/aws.md shows one that does not), and only the queue's own account speaks
// for the cluster's instances. The other fields of the result are left for the caller to fill in.
func ParseInterruptionMessage(body, queueAccount string) cloudprovider.InterruptionMessage {
	var event eventBridgeEvent
	if err := json.Unmarshal([]byte(body), &event); err != nil {
		return cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionUnknown, Err: fmt.Errorf("not an EventBridge event, %w", err)}
	}
	read, err := readEvent(event)
	if err != nil {
		return cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionUnknown, Time: event.Time, Err: err}
	}
	return cloudprovider.InterruptionMessage{Kind: read.kind, InstanceIDs: read.ids, State: read.state, Time: event.Time, Deadline: read.deadline,
		Refused: foreignAccount(event.Account, queueAccount)}
}

// eventSays is what an event says of the instances it names.
type eventSays struct {
	kind  cloudprovider.InterruptionKind
	ids   []string
	state string
	// deadline is a scheduled change's start, zero when it gives none that reads.
	deadline time.Time
}

// foreignAccount says why an event of eventAccount is not believed by a queue of
// queueAccount, nil when it is.
func foreignAccount(eventAccount, queueAccount string) error {
	switch {
	case eventAccount == "":
		return errors.New("the event names no account, as every EventBridge event does: no EventBridge rule sent it")
	case eventAccount != queueAccount:
		return fmt.Errorf("the event was emitted in account %q, not the queue's account %s: another account's rule sent it", eventAccount, queueAccount)
	}
	return nil
}

func readEvent(event eventBridgeEvent) (eventSays, error) {
	if event.DetailType == detailTypeHealth {
		return parseHealthDetail(event)
	}
	var kind cloudprovider.InterruptionKind
	switch event.DetailType {
	case detailTypeSpotInterruption:
		kind = cloudprovider.InterruptionSpot
	case detailTypeRebalance:
		kind = cloudprovider.InterruptionRebalance
	case detailTypeStateChange:
		kind = cloudprovider.InterruptionStateChange
	default:
		return eventSays{}, fmt.Errorf("unsupported event: source %q, detail-type %q", event.Source, event.DetailType)
	}
	if event.Source != "aws.ec2" {
		return eventSays{}, fmt.Errorf("%s event from source %q, not aws.ec2", event.DetailType, event.Source)
	}
	var detail ec2Detail
	if err := json.Unmarshal(event.Detail, &detail); err != nil {
		return eventSays{}, fmt.Errorf("reading the detail of a %s event, %w", event.DetailType, err)
	}
	if !ec2InstanceID.MatchString(detail.InstanceID) {
		return eventSays{}, fmt.Errorf("%s event without an instance id (instance-id %q)", event.DetailType, detail.InstanceID)
	}
	if kind == cloudprovider.InterruptionStateChange && !interruptingStates[detail.State] {
		return eventSays{}, fmt.Errorf("instance %s entering state %q is not an interruption", detail.InstanceID, detail.State)
	}
	return eventSays{kind: kind, ids: []string{detail.InstanceID}, state: detail.State}, nil
}

// parseHealthDetail reads the instances of an EC2 scheduled change and when it starts; every
// other Health event (issues, notifications, other services) is refused. A start time that does
// not read leaves the deadline unknown: the node is drained at once, as without one.
func parseHealthDetail(event eventBridgeEvent) (eventSays, error) {
	if event.Source != "aws.health" {
		return eventSays{}, fmt.Errorf("%s from source %q, not aws.health", event.DetailType, event.Source)
	}
	var detail healthDetail
	if err := json.Unmarshal(event.Detail, &detail); err != nil {
		return eventSays{}, fmt.Errorf("reading the detail of an AWS Health event, %w", err)
	}
	if detail.Service != "EC2" || detail.EventTypeCategory != "scheduledChange" {
		return eventSays{}, fmt.Errorf("AWS Health event %s of service %q, category %q is not an EC2 scheduled change",
			detail.EventTypeCode, detail.Service, detail.EventTypeCategory)
	}
	var ids []string
	for _, entity := range detail.AffectedEntities {
		if ec2InstanceID.MatchString(entity.EntityValue) {
			ids = append(ids, entity.EntityValue)
		}
	}
	if len(ids) == 0 {
		return eventSays{}, fmt.Errorf("AWS Health event %s names no EC2 instance", detail.EventTypeCode)
	}
	read := eventSays{kind: cloudprovider.InterruptionScheduledChange, ids: ids}
	if start, err := time.Parse(time.RFC1123, detail.StartTime); err == nil {
		read.deadline = start
	}
	return read, nil
}

// InterruptionQueue builds the interruption queue for an SQS queue's name (in the default
// region and the caller's account), URL or ARN.
func (p *Provider) InterruptionQueue(id string) (cloudprovider.InterruptionQueue, error) {
	var parsed SQSQueueID
	if sqsQueueName.MatchString(id) && len(id) <= 80 {
		parsed = SQSQueueID{Name: id}
	} else {
		var err error
		if parsed, err = ParseSQSQueueID(id); err != nil {
			return nil, fmt.Errorf("the interruption queue must be an SQS queue name, URL or ARN, %w", err)
		}
	}
	c, err := p.clientsFor(parsed.Region)
	if err != nil {
		return nil, err
	}
	return &interruptionQueue{
		sqsQueue:    sqsQueue{sqs: c.SQS, cloudWatch: c.CloudWatch, clock: p.clock, id: parsed, url: parsed.URL},
		waitSeconds: interruptionWaitSeconds(p.callTimeout),
	}, nil
}

// interruptionQueue reads EventBridge events from SQS; it shares the queue URL resolution of
// the Queue that MetricsProducers read.
type interruptionQueue struct {
	sqsQueue
	waitSeconds int32
}

func (q *interruptionQueue) Receive(ctx context.Context) ([]cloudprovider.InterruptionMessage, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := q.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            sdkaws.String(url),
		MaxNumberOfMessages: interruptionBatch,
		WaitTimeSeconds:     q.waitSeconds,
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, nil
		}
		return nil, awsapi.CallError(err, "sqs:ReceiveMessage", q.resource(), sqsNotFoundCodes...)
	}
	account := q.ownerAccount()
	messages := make([]cloudprovider.InterruptionMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		message := ParseInterruptionMessage(sdkaws.ToString(m.Body), account)
		message.ID = sdkaws.ToString(m.MessageId)
		message.ReceiptHandle = sdkaws.ToString(m.ReceiptHandle)
		messages = append(messages, message)
	}
	return messages, nil
}

func (q *interruptionQueue) Delete(ctx context.Context, message cloudprovider.InterruptionMessage) error {
	url, err := q.queueURL(ctx)
	if err != nil {
		return err
	}
	if _, err := q.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: sdkaws.String(url), ReceiptHandle: sdkaws.String(message.ReceiptHandle)}); err != nil {
		return awsapi.CallError(err, "sqs:DeleteMessage", q.resource()+" message "+message.ID, sqsNotFoundCodes...)
	}
	return nil
}
