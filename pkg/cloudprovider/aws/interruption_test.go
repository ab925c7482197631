package aws_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/test/awsemulator"
)

// The sample events are those of the AWS documentation: "Spot Instance interruption
// notices", "EC2 instance rebalance recommendations", "State change events for Amazon EC2
// instances" (EC2 User Guide) and "Reference: AWS Health events Amazon EventBridge schema".
const (
	sampleSpot = `{
  "version": "0",
  "id": "12345678-1234-1234-1234-123456789012",
  "detail-type": "EC2 Spot Instance Interruption Warning",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2021-02-18T16:48:01Z",
  "region": "us-east-2",
  "resources": ["arn:aws:ec2:us-east-2:123456789012:instance/i-1234567890abcdef0"],
  "detail": {
    "instance-id": "i-1234567890abcdef0",
    "instance-action": "terminate"
  }
}`
	sampleRebalance = `{
  "version": "0",
  "id": "12345678-1234-1234-1234-123456789012",
  "detail-type": "EC2 Instance Rebalance Recommendation",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2021-02-18T16:48:01Z",
  "region": "us-east-2",
  "resources": ["arn:aws:ec2:us-east-2:123456789012:instance/i-1234567890abcdef0"],
  "detail": {
    "instance-id": "i-1234567890abcdef0"
  }
}`
	sampleStateChange = `{
   "id":"7bf73129-1428-4cd3-a780-95db273d1602",
   "detail-type":"EC2 Instance State-change Notification",
   "source":"aws.ec2",
   "account":"123456789012",
   "time":"2021-11-11T21:29:54Z",
   "region":"us-east-1",
   "resources":[
      "arn:aws:ec2:us-east-1:123456789012:instance/i-1234567890abcdef0"
   ],
   "detail":{
      "instance-id":"i-1234567890abcdef0",
      "state":"STATE"
   }
}`
	sampleHealth = `{
  "version": "0",
  "id": "7fb65329-1628-4cf3-a740-95fg457h1402",
  "detail-type": "AWS Health Event",
  "source": "aws.health",
  "account": "123456789012",
  "time": "2023-01-26T01:43:21Z",
  "region": "us-east-1",
  "resources": ["i-1234567890abcdef0", "i-0abcdef1234567890"],
  "detail": {
    "eventArn": "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_ABC123-DEF456",
    "service": "EC2",
    "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
    "eventTypeCategory": "CATEGORY",
    "eventScopeCode": "ACCOUNT_SPECIFIC",
    "communicationId": "1234abc01232a4012345678-1",
    "startTime": "Thu, 09 Feb 2023 05:00:00 GMT",
    "lastUpdatedTime": "Thu, 26 Jan 2023 01:43:21 GMT",
    "statusCode": "upcoming",
    "eventRegion": "us-east-1",
    "eventDescription": [{"language": "en_US", "latestDescription": "EC2 has detected degradation of the underlying hardware hosting your instance."}],
    "affectedEntities": [{"entityValue": "i-1234567890abcdef0"}, {"entityValue": "i-0abcdef1234567890"}],
    "affectedAccount": "123456789012",
    "page": "1",
    "totalPages": "1"
  }
}`
)

func TestParseInterruptionMessage(t *testing.T) {
	stateChange := func(state string) string { return strings.Replace(sampleStateChange, "STATE", state, 1) }
	health := func(category string) string { return strings.Replace(sampleHealth, "CATEGORY", category, 1) }
	for _, tc := range []struct {
		name  string
		body  string
		kind  cloudprovider.InterruptionKind
		ids   []string
		state string
		time  string
		// deadline is a scheduled change's start, "" for none.
		deadline  string
		errSubstr string
	}{
		{name: "spot interruption warning", body: sampleSpot, kind: cloudprovider.InterruptionSpot,
			ids: []string{"i-1234567890abcdef0"}, time: "2021-02-18T16:48:01Z"},
		{name: "rebalance recommendation", body: sampleRebalance, kind: cloudprovider.InterruptionRebalance,
			ids: []string{"i-1234567890abcdef0"}, time: "2021-02-18T16:48:01Z"},
		{name: "stopping", body: stateChange("stopping"), kind: cloudprovider.InterruptionStateChange,
			ids: []string{"i-1234567890abcdef0"}, state: "stopping", time: "2021-11-11T21:29:54Z"},
		{name: "stopped", body: stateChange("stopped"), kind: cloudprovider.InterruptionStateChange, ids: []string{"i-1234567890abcdef0"}, state: "stopped"},
		{name: "shutting-down", body: stateChange("shutting-down"), kind: cloudprovider.InterruptionStateChange, ids: []string{"i-1234567890abcdef0"}, state: "shutting-down"},
		{name: "terminated", body: stateChange("terminated"), kind: cloudprovider.InterruptionStateChange, ids: []string{"i-1234567890abcdef0"}, state: "terminated"},
		{name: "pending is no interruption", body: stateChange("pending"), kind: cloudprovider.InterruptionUnknown, errSubstr: `state "pending" is not an interruption`},
		{name: "running is no interruption", body: stateChange("running"), kind: cloudprovider.InterruptionUnknown, errSubstr: `state "running"`},
		{name: "scheduled change names every affected instance", body: health("scheduledChange"), kind: cloudprovider.InterruptionScheduledChange,
			ids: []string{"i-1234567890abcdef0", "i-0abcdef1234567890"}, time: "2023-01-26T01:43:21Z", deadline: "2023-02-09T05:00:00Z"},
		{name: "a scheduled change whose start does not read: no deadline", body: strings.Replace(health("scheduledChange"), "Thu, 09 Feb 2023 05:00:00 GMT", "soon", 1),
			kind: cloudprovider.InterruptionScheduledChange, ids: []string{"i-1234567890abcdef0", "i-0abcdef1234567890"}},
		{name: "a Health issue is not a scheduled change", body: health("issue"), kind: cloudprovider.InterruptionUnknown, errSubstr: `category "issue"`},
		{name: "another service's Health event", body: strings.Replace(health("scheduledChange"), `"service": "EC2"`, `"service": "RDS"`, 1),
			kind: cloudprovider.InterruptionUnknown, errSubstr: `service "RDS"`},
		{name: "a Health event without instances", body: strings.ReplaceAll(health("scheduledChange"), `"entityValue": "i-`, `"entityValue": "vol-`),
			kind: cloudprovider.InterruptionUnknown, errSubstr: "names no EC2 instance"},
		{name: "another event", body: strings.Replace(sampleSpot, "EC2 Spot Instance Interruption Warning", "EC2 Spot Instance Request Fulfillment", 1),
			kind: cloudprovider.InterruptionUnknown, errSubstr: `unsupported event: source "aws.ec2", detail-type "EC2 Spot Instance Request Fulfillment"`},
		{name: "an EC2 detail type from another source", body: strings.Replace(sampleSpot, `"aws.ec2"`, `"my.app"`, 1),
			kind: cloudprovider.InterruptionUnknown, errSubstr: `source "my.app"`},
		{name: "no instance id", body: strings.Replace(sampleSpot, `"instance-id": "i-1234567890abcdef0"`, `"instance-id": ""`, 1),
			kind: cloudprovider.InterruptionUnknown, errSubstr: "without an instance id"},
		{name: "a detail of the wrong shape", body: strings.Replace(sampleRebalance, `"detail": {`, `"detail": [{`, 1) + "]",
			kind: cloudprovider.InterruptionUnknown, errSubstr: "not an EventBridge event"},
		{name: "a detail that is not an object", body: `{"detail-type": "EC2 Instance Rebalance Recommendation", "source": "aws.ec2", "detail": "i-1234567890abcdef0"}`,
			kind: cloudprovider.InterruptionUnknown, errSubstr: "reading the detail"},
		{name: "not JSON", body: "job", kind: cloudprovider.InterruptionUnknown, errSubstr: "not an EventBridge event"},
		{name: "empty", body: "", kind: cloudprovider.InterruptionUnknown, errSubstr: "not an EventBridge event"},
		{name: "a bad time", body: strings.Replace(sampleSpot, "2021-02-18T16:48:01Z", "yesterday", 1), kind: cloudprovider.InterruptionUnknown, errSubstr: "not an EventBridge event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := aws.ParseInterruptionMessage(tc.body, "123456789012")
			if got.Kind != tc.kind || !slices.Equal(got.InstanceIDs, tc.ids) || got.State != tc.state || got.Refused != nil {
				t.Errorf("kind %s, instances %v, state %q, refused %v; want %s, %v, %q (error %v)", got.Kind, got.InstanceIDs, got.State, got.Refused, tc.kind, tc.ids, tc.state, got.Err)
			}
			if tc.time != "" && got.Time.Format(time.RFC3339) != tc.time {
				t.Errorf("time %s, want %s", got.Time.Format(time.RFC3339), tc.time)
			}
			if deadline := got.Deadline.UTC().Format(time.RFC3339); (tc.deadline == "") != got.Deadline.IsZero() || tc.deadline != "" && deadline != tc.deadline {
				t.Errorf("deadline %s (zero %t), want %q", deadline, got.Deadline.IsZero(), tc.deadline)
			}
			switch {
			case tc.errSubstr == "" && got.Err != nil:
				t.Errorf("error %v", got.Err)
			case tc.errSubstr != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.errSubstr)):
				t.Errorf("error %v, want one containing %q", got.Err, tc.errSubstr)
			}
		})
	}
}

// TestForgedInterruptionIsRefused is finding 34.14: an event is believed only when it was
// emitted in the queue's account. EventBridge stamps every event with the account it was
// emitted in, and a queue policy that lets another account's rule send to the queue would
// otherwise let that account drain the cluster's nodes.
func TestForgedInterruptionIsRefused(t *testing.T) {
	const queueAccount = "123456789012"
	accountField := regexp.MustCompile(`"account":\s*"123456789012",`)
	withAccount := func(body, account string) string {
		return accountField.ReplaceAllLiteralString(body, `"account": "`+account+`",`)
	}
	withoutAccount := func(body string) string { return accountField.ReplaceAllLiteralString(body, "") }
	health := strings.Replace(sampleHealth, "CATEGORY", "scheduledChange", 1)
	for _, tc := range []struct {
		name      string
		body      string
		kind      cloudprovider.InterruptionKind
		refusedAs string // part of the refusal, empty when the event is believed
	}{
		{name: "spot interruption of the queue's account", body: sampleSpot, kind: cloudprovider.InterruptionSpot},
		{name: "scheduled change of the queue's account", body: health, kind: cloudprovider.InterruptionScheduledChange},
		{name: "spot interruption of another account", body: withAccount(sampleSpot, "999999999999"), kind: cloudprovider.InterruptionSpot,
			refusedAs: `emitted in account "999999999999", not the queue's account 123456789012`},
		{name: "scheduled change of another account", body: withAccount(health, "999999999999"), kind: cloudprovider.InterruptionScheduledChange,
			refusedAs: `emitted in account "999999999999"`},
		{name: "state change of another account", body: withAccount(strings.Replace(sampleStateChange, "STATE", "terminated", 1), "210987654321"),
			kind: cloudprovider.InterruptionStateChange, refusedAs: `emitted in account "210987654321"`},
		{name: "an account that only ends like the queue's", body: withAccount(sampleSpot, "0123456789012"), kind: cloudprovider.InterruptionSpot,
			refusedAs: `emitted in account "0123456789012"`},
		{name: "spot interruption without an account", body: withoutAccount(sampleSpot), kind: cloudprovider.InterruptionSpot,
			refusedAs: "names no account"},
		{name: "rebalance recommendation without an account", body: withoutAccount(sampleRebalance), kind: cloudprovider.InterruptionRebalance,
			refusedAs: "names no account"},
		{name: "an unreadable event of another account stays unknown", body: withAccount(strings.Replace(sampleSpot, `"aws.ec2"`, `"my.app"`, 1), "999999999999"),
			kind: cloudprovider.InterruptionUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := aws.ParseInterruptionMessage(tc.body, queueAccount)
			if got.Kind != tc.kind {
				t.Errorf("kind %s, want %s (error %v)", got.Kind, tc.kind, got.Err)
			}
			switch {
			case tc.refusedAs == "" && got.Refused != nil:
				t.Errorf("refused: %v; want the event believed", got.Refused)
			case tc.refusedAs != "" && (got.Refused == nil || !strings.Contains(got.Refused.Error(), tc.refusedAs)):
				t.Errorf("refused: %v; want a refusal containing %q", got.Refused, tc.refusedAs)
			}
		})
	}
}

const interruptionQueue = "interruptions"

// interruptionEnv is an emulator with an interruption queue whose messages are invisible
// for visibility after they are received.
func interruptionEnv(t *testing.T, visibility string) *env {
	t.Helper()
	e := newEnvIsolated(t)
	if err := e.emulator.Seed(awsemulator.Seed{SQSQueues: []awsemulator.SeedQueue{{Name: interruptionQueue, Attributes: map[string]string{"VisibilityTimeout": visibility}}}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) interruptionQueue(t *testing.T, id string) cloudprovider.InterruptionQueue {
	t.Helper()
	q, err := e.provider.InterruptionQueue(id)
	if err != nil {
		t.Fatalf("InterruptionQueue(%s) = %v", id, err)
	}
	return q
}

func (e *env) interrupt(t *testing.T, instanceID string, kind awsemulator.InterruptionKind, state string) string {
	t.Helper()
	id, err := e.emulator.Interrupt(interruptionQueue, instanceID, kind, state)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func receive(t *testing.T, q cloudprovider.InterruptionQueue) []cloudprovider.InterruptionMessage {
	t.Helper()
	messages, err := q.Receive(context.Background())
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return messages
}

func TestInterruptionQueueReceivesParsesAndDeletes(t *testing.T) {
	isolateFromHost(t)
	for _, id := range []string{
		interruptionQueue,
		"https://sqs.us-west-2.amazonaws.com/123456789012/" + interruptionQueue,
		"arn:aws:sqs:us-west-2:123456789012:" + interruptionQueue,
	} {
		t.Run(id, func(t *testing.T) {
			e := interruptionEnv(t, "30")
			q := e.interruptionQueue(t, id)
			spot := e.interrupt(t, "i-0000000000000000a", awsemulator.InterruptSpot, "")
			rebalance := e.interrupt(t, "i-0000000000000000b", awsemulator.InterruptRebalance, "")
			scheduled := e.interrupt(t, "i-0000000000000000c", awsemulator.InterruptScheduledChange, "")
			terminated := e.interrupt(t, "i-0000000000000000d", awsemulator.InterruptStateChange, "terminated")
			if err := e.emulator.SendMessages(interruptionQueue, 1, "not an event"); err != nil {
				t.Fatal(err)
			}
			forged, err := e.emulator.InterruptFromAccount(interruptionQueue, "999999999999", "i-0000000000000000e", awsemulator.InterruptSpot, "")
			if err != nil {
				t.Fatal(err)
			}
			messages := receive(t, q)
			type summary struct {
				id    string
				kind  cloudprovider.InterruptionKind
				ids   string
				state string
			}
			var got []summary
			for _, m := range messages {
				got = append(got, summary{m.ID, m.Kind, strings.Join(m.InstanceIDs, ","), m.State})
				if m.ReceiptHandle == "" || (m.Kind != cloudprovider.InterruptionUnknown && !m.Time.Equal(e.clock.Now())) {
					t.Errorf("message %s: receipt handle %q, time %s; want one, %s", m.ID, m.ReceiptHandle, m.Time, e.clock.Now())
				}
			}
			want := []summary{
				{spot, cloudprovider.InterruptionSpot, "i-0000000000000000a", ""},
				{rebalance, cloudprovider.InterruptionRebalance, "i-0000000000000000b", ""},
				{scheduled, cloudprovider.InterruptionScheduledChange, "i-0000000000000000c", ""},
				{terminated, cloudprovider.InterruptionStateChange, "i-0000000000000000d", "terminated"},
			}
			if len(got) != 6 || !slices.Equal(got[:4], want) || got[4].kind != cloudprovider.InterruptionUnknown || messages[4].Err == nil {
				t.Fatalf("received %+v, want %+v, an unknown message and a forged one", got, want)
			}
			// The emulator's scheduled change starts in two weeks, written as AWS Health writes it.
			if deadline := messages[2].Deadline; !deadline.Equal(e.clock.Now().Add(14 * 24 * time.Hour).Truncate(time.Second)) {
				t.Errorf("scheduled change starts %s, want two weeks after %s", deadline, e.clock.Now())
			}
			for _, m := range messages[:5] {
				if m.Refused != nil {
					t.Errorf("message %s refused: %v; want it believed, it comes from the queue's account", m.ID, m.Refused)
				}
			}
			if m := messages[5]; m.ID != forged || m.Kind != cloudprovider.InterruptionSpot || m.Refused == nil {
				t.Errorf("message %s: %s, refused %v; want message %s, a spot interruption refused", m.ID, m.Kind, m.Refused, forged)
			}
			for _, m := range messages {
				if err := q.Delete(context.Background(), m); err != nil {
					t.Fatalf("Delete(%s): %v", m.ID, err)
				}
			}
			e.clock.Step(time.Minute)
			if n, err := e.queue(t, "arn:aws:sqs:us-west-2:123456789012:"+interruptionQueue).Length(context.Background()); err != nil || n != 0 {
				t.Errorf("%d messages left (%v), want none", n, err)
			}
		})
	}
}

// A message received and not deleted, as when the controller dies before acting, comes back
// once its visibility timeout runs out.
func TestInterruptionQueueRedeliversWhatWasNotDeleted(t *testing.T) {
	isolateFromHost(t)
	e := interruptionEnv(t, "30")
	q := e.interruptionQueue(t, interruptionQueue)
	id := e.interrupt(t, "i-0000000000000000a", awsemulator.InterruptSpot, "")
	first := receive(t, q)
	if len(first) != 1 || first[0].ID != id {
		t.Fatalf("received %+v, want message %s", first, id)
	}
	e.clock.Step(31 * time.Second)
	again := receive(t, q)
	if len(again) != 1 || again[0].ID != id || again[0].ReceiptHandle == first[0].ReceiptHandle {
		t.Fatalf("received %+v again, want message %s with a new receipt handle", again, id)
	}
	if err := q.Delete(context.Background(), again[0]); err != nil {
		t.Fatal(err)
	}
}

// Receive long-polls: a message sent while it waits is returned at once, not at the next call.
func TestInterruptionQueueLongPolls(t *testing.T) {
	isolateFromHost(t)
	e := interruptionEnv(t, "30")
	q := e.interruptionQueue(t, interruptionQueue)
	received := make(chan []cloudprovider.InterruptionMessage, 1)
	go func() {
		messages, err := q.Receive(context.Background())
		if err != nil {
			t.Error(err)
		}
		received <- messages
	}()
	id := e.interrupt(t, "i-0000000000000000a", awsemulator.InterruptSpot, "")
	// The receive may have started after the send; then it finds the message at once.
	if messages := <-received; len(messages) != 1 || messages[0].ID != id {
		t.Fatalf("received %+v, want message %s", messages, id)
	}
}

func TestInterruptionQueueRecoversFromThrottling(t *testing.T) {
	isolateFromHost(t)
	for _, action := range []string{"ReceiveMessage", "DeleteMessage"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			e := interruptionEnv(t, "30")
			q := e.interruptionQueue(t, interruptionQueue)
			e.interrupt(t, "i-0000000000000000a", awsemulator.InterruptSpot, "")
			throttles := maxAttempts - 1
			fault, err := e.emulator.InjectFault(awsemulator.Fault{Service: "sqs", Action: action, Kind: awsemulator.FaultThrottle, Times: throttles})
			if err != nil {
				t.Fatal(err)
			}
			messages := receive(t, q)
			if len(messages) != 1 {
				t.Fatalf("received %d messages, want 1", len(messages))
			}
			if err := q.Delete(context.Background(), messages[0]); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if hits := e.emulator.FaultHits(fault); hits != throttles {
				t.Errorf("throttled %d times, want %d", hits, throttles)
			}
		})
	}
}

func TestInterruptionQueueErrorsNameTheAction(t *testing.T) {
	isolateFromHost(t)
	t.Run("access denied", func(t *testing.T) {
		e := interruptionEnv(t, "30")
		q := e.interruptionQueue(t, "https://sqs.us-west-2.amazonaws.com/123456789012/"+interruptionQueue)
		if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "sqs", Action: "ReceiveMessage", Kind: awsemulator.FaultAccessDenied}); err != nil {
			t.Fatal(err)
		}
		_, err := q.Receive(context.Background())
		var denied *cloudprovider.AccessDeniedError
		if !errors.As(err, &denied) || denied.Action != "sqs:ReceiveMessage" {
			t.Errorf("Receive: %v, want access denied to sqs:ReceiveMessage", err)
		}
	})
	t.Run("a missing queue", func(t *testing.T) {
		e := interruptionEnv(t, "30")
		_, err := e.interruptionQueue(t, "missing").Receive(context.Background())
		var notFound *cloudprovider.NotFoundError
		if !errors.As(err, &notFound) {
			t.Errorf("Receive: %v, want not found", err)
		}
	})
	t.Run("a malformed id", func(t *testing.T) {
		e := interruptionEnv(t, "30")
		if _, err := e.provider.InterruptionQueue("arn:aws:sns:us-west-2:123456789012:topic"); err == nil {
			t.Error("an SNS topic was accepted as the interruption queue")
		}
	})
}
