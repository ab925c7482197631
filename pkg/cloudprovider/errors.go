package cloudprovider

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoData means the cloud answered but had no datapoint for a metric. A
// caller must treat the value as unknown, never as zero.
var ErrNoData = errors.New("no datapoints")

// OutOfBoundsError is returned when a requested size lies outside the group's
// configured bounds; the request is not forced.
type OutOfBoundsError struct {
	Resource  string
	Requested int32
	Min, Max  int32
}

func (e *OutOfBoundsError) Error() string {
	return fmt.Sprintf("desired replicas %d for %s is outside the group's bounds [%d, %d]", e.Requested, e.Resource, e.Min, e.Max)
}

// AccessDeniedError is returned when the credentials lack permission for an
// action. Action is the IAM action to grant, e.g. "autoscaling:SetDesiredCapacity".
type AccessDeniedError struct {
	Action   string
	Resource string
	Err      error
}

func (e *AccessDeniedError) Error() string {
	return fmt.Sprintf("access denied: %s on %s (grant %s), %v", e.Action, e.Resource, e.Action, e.Err)
}

func (e *AccessDeniedError) Unwrap() error { return e.Err }

// NotFoundError is returned when the resource an id names does not exist.
type NotFoundError struct {
	Resource string
	Err      error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s not found, %v", e.Resource, e.Err)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// BusyError is returned when a resource cannot accept a change until an
// operation in flight completes. It is not a failure: retry once the resource
// reports Stable.
type BusyError struct {
	Resource string
	Reason   string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s is busy: %s", e.Resource, e.Reason)
}

// InvalidIDError is returned when an id is not well formed for its type.
type InvalidIDError struct {
	Type, ID string
	Reason   string
}

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("invalid id %q for type %s: %s", e.ID, e.Type, e.Reason)
}

// UnsupportedTypeError is returned for a type no implementation is registered for.
type UnsupportedTypeError struct {
	Type      string
	Supported []string
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("unsupported type %q, expected one of %v", e.Type, e.Supported)
}

// InsufficientCapacityError is returned when the cloud had no capacity for any
// of the offerings a launch tried. Offerings lists them, in the order tried, so
// that the caller can stop offering them for a while.
type InsufficientCapacityError struct {
	Offerings []OfferingKey
	// Reasons holds the cloud's reason for each offering that has one, e.g.
	// InsufficientInstanceCapacity, for the caller's Events.
	Reasons map[OfferingKey]string
	Err     error
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity for %d offerings %v, %v", len(e.Offerings), e.Offerings, e.Err)
}

func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// StalePricesError says that offerings carry prices older than the cloud's current ones (the
// last that were read, or a catalogue built into the binary) because reading them failed.
type StalePricesError struct {
	// Since is when the prices were last read successfully, zero if never.
	Since time.Time
	Err   error
}

func (e *StalePricesError) Error() string {
	if e.Since.IsZero() {
		return fmt.Sprintf("prices are the built-in catalogue's: reading the cloud's failed, %v", e.Err)
	}
	return fmt.Sprintf("prices are those read at %s: reading the cloud's failed since, %v", e.Since.UTC().Format(time.RFC3339), e.Err)
}

func (e *StalePricesError) Unwrap() error { return e.Err }
