package cloudprovider

import (
	"errors"
	"fmt"
	"strings"
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

// UnreadInstancesError is what Create returns, beside the instances it could read, when it
// launched instances it could not read back (the cloud's describe failed): they run, but only
// what the launch's answer told of them is known (ID, ProviderID, InstanceType, Zone,
// CapacityType, Labels), not their node name. They are the caller's: it reads them again with
// Get, rather than launching others for the same pods.
type UnreadInstancesError struct {
	Instances []*Instance
	Err       error
}

func (e *UnreadInstancesError) Error() string {
	ids := make([]string, len(e.Instances))
	for i, instance := range e.Instances {
		ids[i] = instance.ID
	}
	return fmt.Sprintf("launched %d instances that could not be read back (%s), %v", len(e.Instances), strings.Join(ids, ", "), e.Err)
}

func (e *UnreadInstancesError) Unwrap() error { return e.Err }

// The reasons of an ActionRequiredError: each names a cause of failing launches that only the
// user can fix. They are the reasons of the Events and conditions that tell of it, and the
// values of the launch error metric's reason label (docs/troubleshooting.md).
const (
	ReasonInvalidInstanceProfile = "InvalidInstanceProfile"
	ReasonInvalidLaunchTemplate  = "InvalidLaunchTemplate"
	ReasonInvalidSubnet          = "InvalidSubnet"
	ReasonInvalidSecurityGroup   = "InvalidSecurityGroup"
	ReasonInvalidAMI             = "InvalidAMI"
	ReasonUnauthorized           = "Unauthorized"
	ReasonVCPUQuotaExceeded      = "VCPUQuotaExceeded"
)

// ActionRequiredError is a launch, or what a launch needs, failing for a reason only the user
// can fix: a resource the Provisioner names that the cloud refuses, the controller's
// permissions, an account quota. Trying again fails the same way until they act.
type ActionRequiredError struct {
	// Reason names the cause: one of the Reason* constants.
	Reason string
	// Field is the Provisioner's field to fix, e.g. spec.provider.instanceProfile; empty when
	// the cause is none of its fields (the controller's permissions, an account quota), which
	// Err then says.
	Field string
	Err   error
}

func (e *ActionRequiredError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v; check %s", e.Err, e.Field)
}

func (e *ActionRequiredError) Unwrap() error { return e.Err }

// ActionRequired is the ActionRequiredError err is or wraps, an AccessDeniedError being one of
// reason Unauthorized; nil for any other error.
func ActionRequired(err error) *ActionRequiredError {
	var required *ActionRequiredError
	if errors.As(err, &required) {
		return required
	}
	var denied *AccessDeniedError
	if errors.As(err, &denied) {
		return &ActionRequiredError{Reason: ReasonUnauthorized, Err: err}
	}
	return nil
}

// LaunchedBeforeError is what Create returns when a launch under the request's IdempotencyKey was
// made before with other candidates or counts, which the cloud will not answer again: its
// instances are found by their LaunchGroup instead.
type LaunchedBeforeError struct {
	Key string
	Err error
}

func (e *LaunchedBeforeError) Error() string {
	return fmt.Sprintf("a launch under key %s was made before with other parameters, %v", e.Key, e.Err)
}

func (e *LaunchedBeforeError) Unwrap() error { return e.Err }
