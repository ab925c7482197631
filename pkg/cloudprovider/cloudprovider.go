// Package cloudprovider is the seam between Karpenter's controllers and the
// cloud: one small interface per capability, node groups and queues selected by
// the type string that users write in a spec, instances launched for
// provisioning. It speaks in core Kubernetes types (resources, labels, taints,
// node selector requirements, raw extensions) but never imports Karpenter's own
// API packages, so that any controller, the webhook or a tool can use it. The
// type strings themselves are defined once, with the CRD enums that accept them,
// in pkg/apis/autoscaling/v1alpha1; each cloud registers the ones it implements.
package cloudprovider

import (
	"context"
	"time"
)

// NamespaceTag is the cloud tag that grants a node group to one Kubernetes namespace:
// only ScalableNodeGroups in the namespace it names may drive the group. The grant lives on
// the cloud side because whoever can tag the group already controls it; being able to
// create an object in some namespace proves nothing about the group.
const NamespaceTag = "karpenter.sh/namespace"

// NodeGroup is a set of interchangeable nodes whose size the cloud manages.
type NodeGroup interface {
	// ID identifies the group, normalized without I/O: two ids that name the same group
	// (a name and its ARN, a name resolved in the default region) have the same ID.
	ID() string
	// Status reads the group's size as the cloud sees it now.
	Status(ctx context.Context) (NodeGroupStatus, error)
	// SetDesiredReplicas asks the cloud to resize the group. It never forces a
	// value outside the group's bounds (*OutOfBoundsError) and returns
	// *BusyError when the group cannot take a new size until an update in
	// flight completes.
	SetDesiredReplicas(ctx context.Context, replicas int32) error
}

// NodeGroupStatus is a point-in-time view of a node group.
type NodeGroupStatus struct {
	// DesiredReplicas is the size the cloud is converging to.
	DesiredReplicas int32
	// Replicas is how many instances are serving (e.g. InService).
	Replicas int32
	// MinReplicas and MaxReplicas bound DesiredReplicas.
	MinReplicas, MaxReplicas int32
	// Stable is true when nothing is in flight: no instance launching or
	// terminating, no update in progress, and Replicas == DesiredReplicas.
	Stable bool
	// Message says what is in flight when the group is not stable, in words
	// fit for a condition message.
	Message string
	// NodeLabels are labels every node of the group carries, as far as the
	// cloud declares them; they select the group's nodes.
	NodeLabels map[string]string
	// GrantedNamespace is the namespace the group's NamespaceTag names, "" when the
	// group is not tagged: then no namespace may drive it.
	GrantedNamespace string
}

// Queue is a message queue whose backlog can drive scaling.
type Queue interface {
	// Length is the approximate number of messages available for retrieval.
	Length(ctx context.Context) (int64, error)
	// OldestMessageAge is the approximate age of the oldest message. It returns
	// an error wrapping ErrNoData when the cloud has no recent datapoint.
	OldestMessageAge(ctx context.Context) (time.Duration, error)
}

// Factory builds capability implementations from a spec's type and id. Building
// is cheap and does no I/O; malformed ids fail here with *InvalidIDError and
// unknown types with *UnsupportedTypeError.
type Factory interface {
	NodeGroupFor(typ, id string) (NodeGroup, error)
	QueueFor(typ, id string) (Queue, error)
}

// Validator checks, without I/O or credentials, what users write about the
// cloud in specs, so that admission rejects mistakes before a controller acts
// on them. Errors are fit to show to the user as they are.
type Validator interface {
	// ValidateNodeGroupID returns *InvalidIDError for an id malformed for its
	// type and *UnsupportedTypeError for a type no cloud registered.
	ValidateNodeGroupID(typ, id string) error
	// ValidateQueueID is ValidateNodeGroupID for queues.
	ValidateQueueID(typ, id string) error
	ProviderValidator
}
