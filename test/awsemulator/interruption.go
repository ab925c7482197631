package awsemulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// InterruptionKind names an EC2 event the emulator can emit into a queue, as an EventBridge
// rule targeting SQS delivers it.
type InterruptionKind string

const (
	InterruptSpot            InterruptionKind = "spot"
	InterruptRebalance       InterruptionKind = "rebalance"
	InterruptScheduledChange InterruptionKind = "scheduled-change"
	InterruptStateChange     InterruptionKind = "state-change"
)

// Interrupt puts on a queue the EventBridge event of kind about an instance, stamped with the
// emulator's time, and returns the message id. state is the new state of a state change
// ("stopping" when empty) and is ignored for the other kinds. The instance need not be one
// the emulator runs: a cluster's instances may come from elsewhere, and events about
// instances a cluster does not know must be handled too.
func (e *Emulator) Interrupt(queueName, instanceID string, kind InterruptionKind, state string) (string, error) {
	return e.InterruptFromAccount(queueName, e.opts.AccountID, instanceID, kind, state)
}

// InterruptFromAccount is Interrupt with the event stamped as emitted in account, as another
// account's EventBridge rule would deliver it to a queue whose policy lets it; an empty
// account leaves the field out, as no EventBridge event does.
func (e *Emulator) InterruptFromAccount(queueName, account, instanceID string, kind InterruptionKind, state string) (string, error) {
	if !instanceIDPattern.MatchString(instanceID) {
		return "", fmt.Errorf("%q is not an EC2 instance id (i- and 8 to 17 hex digits)", instanceID)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q, ok := e.queues[queueName]
	if !ok {
		return "", fmt.Errorf("queue %q does not exist", queueName)
	}
	event := map[string]any{
		"version": "0", "id": e.newID(), "region": e.opts.Region,
		"time":      now.UTC().Format(time.RFC3339),
		"resources": []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", e.opts.Region, account, instanceID)},
	}
	if account != "" {
		event["account"] = account
	}
	switch kind {
	case InterruptSpot:
		event["source"], event["detail-type"] = "aws.ec2", "EC2 Spot Instance Interruption Warning"
		event["detail"] = map[string]string{"instance-id": instanceID, "instance-action": "terminate"}
	case InterruptRebalance:
		event["source"], event["detail-type"] = "aws.ec2", "EC2 Instance Rebalance Recommendation"
		event["detail"] = map[string]string{"instance-id": instanceID}
	case InterruptStateChange:
		if state == "" {
			state = "stopping"
		}
		event["source"], event["detail-type"] = "aws.ec2", "EC2 Instance State-change Notification"
		event["detail"] = map[string]string{"instance-id": instanceID, "state": state}
	case InterruptScheduledChange:
		// AWS Health names instances in affectedEntities and writes its times in RFC 1123.
		event["source"], event["detail-type"] = "aws.health", "AWS Health Event"
		event["resources"] = []string{instanceID}
		event["detail"] = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/%s", e.opts.Region, e.newID()),
			"service":           "EC2",
			"eventTypeCode":     "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"eventTypeCategory": "scheduledChange",
			"eventScopeCode":    "ACCOUNT_SPECIFIC",
			"startTime":         now.Add(14 * 24 * time.Hour).UTC().Format(http.TimeFormat),
			"statusCode":        "upcoming",
			"eventRegion":       e.opts.Region,
			"affectedEntities":  []map[string]string{{"entityValue": instanceID}},
			"affectedAccount":   account,
		}
	default:
		return "", fmt.Errorf("unknown interruption kind %q; want %s, %s, %s or %s", kind, InterruptSpot, InterruptRebalance, InterruptScheduledChange, InterruptStateChange)
	}
	body, err := json.Marshal(event)
	if err != nil {
		return "", fmt.Errorf("encoding the event, %w", err)
	}
	return e.sendMessage(q, string(body), 0, now).id, nil
}

// MessageCount is how many messages a queue holds, in flight or not.
func (e *Emulator) MessageCount(queueName string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q, ok := e.queues[queueName]
	if !ok {
		return 0, fmt.Errorf("queue %q does not exist", queueName)
	}
	return len(q.messages), nil
}

// ReceiveCount is how many times a queue's message was received; an error when the queue
// holds no such message (never sent, or deleted).
func (e *Emulator) ReceiveCount(queueName, messageID string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q, ok := e.queues[queueName]
	if !ok {
		return 0, fmt.Errorf("queue %q does not exist", queueName)
	}
	for _, m := range q.messages {
		if m.id == messageID {
			return m.receiveCount, nil
		}
	}
	return 0, fmt.Errorf("queue %q holds no message %s", queueName, messageID)
}
