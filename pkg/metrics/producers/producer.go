package producers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Producer computes the signal of one kind of MetricsProducer.
type Producer interface {
	// Produce reads the producer's inputs, writes its kind's field of mp.Status and returns
	// the samples to export. On error mp.Status may be partly written and must be discarded.
	// Errors are *Error.
	Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Result, error)
}

// Result is a successful computation.
type Result struct {
	Samples []Sample
	// NextChange, when not zero, is when the value is known to change next without any
	// other event (a schedule's next transition), so the caller can recompute right then.
	NextChange time.Time
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
	ReasonInvalidSchedule = "InvalidSchedule"
)

// ReasonOf is the condition reason of an error returned by Produce.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "Failed"
}

// Kinds holds one Producer per kind of MetricsProducer.
type Kinds struct {
	ReservedCapacity Producer
	PendingCapacity  Producer
	Queue            Producer
	Schedule         Producer
}

// NewKinds builds the producers. reader lists nodes and pods; for pods it must support the
// field selector pods.NodeNameField (the API server does, a cache needs pods.IndexNodeName).
// clouds resolves queues; when nil, queue producers fail with a condition saying so.
func NewKinds(reader client.Reader, clouds cloudprovider.Factory, clk clock.PassiveClock) Kinds {
	return Kinds{
		ReservedCapacity: &ReservedCapacityProducer{Reader: reader},
		PendingCapacity:  &PendingCapacityProducer{Reader: reader},
		Queue:            NewQueueProducer(clouds),
		Schedule:         &ScheduleProducer{Clock: clk},
	}
}

// Forget drops whatever the producers keep for a deleted MetricsProducer.
func (k Kinds) Forget(key types.NamespacedName) {
	for _, p := range []Producer{k.ReservedCapacity, k.PendingCapacity, k.Queue, k.Schedule} {
		if f, ok := p.(interface{ Forget(types.NamespacedName) }); ok {
			f.Forget(key)
		}
	}
}

// For returns the producer of mp's kind.
func (k Kinds) For(mp *v1alpha1.MetricsProducer) (Producer, error) {
	switch {
	case mp.Spec.ReservedCapacity != nil:
		return k.ReservedCapacity, nil
	case mp.Spec.PendingCapacity != nil:
		return k.PendingCapacity, nil
	case mp.Spec.Queue != nil:
		return k.Queue, nil
	case mp.Spec.ScheduleSpec != nil:
		return k.Schedule, nil
	default:
		return nil, failure(ReasonUnknownKind, "spec sets none of pendingCapacity, reservedCapacity, queue or scheduleSpec")
	}
}
