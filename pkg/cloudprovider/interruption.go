package cloudprovider

import (
	"context"
	"time"
)

// InterruptionKind says what the cloud announced about an instance.
type InterruptionKind string

// The kinds of interruption message, also the values of the interruption metrics' kind label.
const (
	// InterruptionSpot is a spot instance's interruption warning: the cloud reclaims it
	// about two minutes later.
	InterruptionSpot InterruptionKind = "SpotInterruption"
	// InterruptionRebalance is a rebalance recommendation: the spot instance is at an
	// elevated risk of interruption, which may never come.
	InterruptionRebalance InterruptionKind = "RebalanceRecommendation"
	// InterruptionScheduledChange is maintenance the cloud scheduled for the instance
	// (a retirement, a stop, a reboot).
	InterruptionScheduledChange InterruptionKind = "ScheduledChange"
	// InterruptionStateChange is the instance stopping, stopped, shutting down or terminated.
	InterruptionStateChange InterruptionKind = "StateChange"
	// InterruptionUnknown is a message that could not be read, or is about something else;
	// Err says why. It is only ever deleted.
	InterruptionUnknown InterruptionKind = "Unknown"
)

// InterruptionMessage is one message of an interruption queue.
type InterruptionMessage struct {
	// ID identifies the message in logs.
	ID string
	// Kind is what happens to the instances.
	Kind InterruptionKind
	// InstanceIDs are the cloud's ids of the instances concerned (e.g. i-0123456789abcdef0),
	// the last segment of their nodes' spec.providerID. A scheduled change may name several.
	InstanceIDs []string
	// State is the instance's new state for InterruptionStateChange (e.g. "stopping").
	State string
	// Time is when the cloud emitted the event.
	Time time.Time
	// Deadline is when a scheduled change starts, zero when the message does not say (and for
	// every other kind: they take effect at once or within minutes).
	Deadline time.Time
	// Err says why a message is InterruptionUnknown.
	Err error
	// Refused, when set, says why a message that reads as an interruption is not believed: it
	// did not come from the cloud account the queue belongs to (on AWS, another account's
	// EventBridge rule sent it). Such a message is deleted and never acted upon.
	Refused error
	// ReceiptHandle is the queue's token for deleting this delivery of the message.
	ReceiptHandle string
}

// InterruptionQueue delivers the cloud's notices about instances at least once: a message
// received and not deleted is delivered again after a while.
type InterruptionQueue interface {
	// Receive waits a while for messages and returns those that arrived, none when the wait
	// ran out. A message that cannot be parsed comes back as InterruptionUnknown, never as
	// an error: errors are the queue's own. A message from another account comes back with
	// Refused set.
	Receive(ctx context.Context) ([]InterruptionMessage, error)
	// Delete removes a received message for good.
	Delete(ctx context.Context, message InterruptionMessage) error
}
