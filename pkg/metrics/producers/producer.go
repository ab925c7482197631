package producers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// Producer computes the signal of one kind of MetricsProducer, whose status is S.
type Producer[S any] interface {
	// Produce reads the producer's inputs and returns what it computed. It only reads mp:
	// the controller writes the output. Errors are *Error.
	Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Output[S], error)
}

// Output is a successful computation of a kind whose status is S.
type Output[S any] struct {
	Samples []Sample
	// Status is the kind's field of the MetricsProducer's status.
	Status S
	// NextChange, when not zero, is when the value is known to change next without any
	// other event (a schedule's next transition), so the caller can recompute right then.
	NextChange time.Time
	// Partial, when set, says which part of the signal could not be computed: its gauges
	// are absent from Samples (withdrawn, never left at an old value) while the rest is
	// exported.
	Partial *Error
}

// Error is a failed computation: Reason is a CamelCase condition reason and Err says what
// failed, fit for a condition message and an Event.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

func failure(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Reasons a computation fails with.
const (
	ReasonUnknownKind     = "UnknownKind"
	ReasonNodesUnreadable = "NodesUnreadable"
	ReasonPodsUnreadable  = "PodsUnreadable"
	ReasonNoCapacity      = "NoCapacity"
	ReasonNoNodeShape     = "NoNodeShape"
	ReasonQueueUnreadable = "QueueUnreadable"
	// ReasonOldestMessageAgeUnavailable is a queue whose length was read but whose oldest
	// message age was not.
	ReasonOldestMessageAgeUnavailable = "OldestMessageAgeUnavailable"
	ReasonInvalidSchedule             = "InvalidSchedule"
)

// ReasonOf is the condition reason of an error returned by Produce.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "Failed"
}
