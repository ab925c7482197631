package cloudprovider

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
)

// InstanceProvider launches and terminates individual instances, the way
// provisioning adds nodes: it lists what can be launched for a Provisioner's
// constraints, launches one instance of the cheapest candidate that has
// capacity, and finds and deletes the instances this cluster owns.
type InstanceProvider interface {
	// InstanceTypes lists the instance types that satisfy constraints, each
	// with the offerings (zone, capacity type, price) that satisfy them too. An
	// offering the cloud recently had no capacity for has Available false.
	InstanceTypes(ctx context.Context, constraints Constraints) ([]*InstanceType, error)
	// Create launches request.Count instances (one when Count is 0), each from the first
	// candidate, in request order, the cloud has capacity for. It may launch fewer than
	// Count when the candidates run out of capacity (a partial fulfilment), but never none:
	// when it launched none it returns *InsufficientCapacityError naming the offerings
	// that failed, so that the caller can stop offering them. A request with the
	// IdempotencyKey of an earlier one is answered with that one's instances, those
	// terminated since included (their State says so).
	Create(ctx context.Context, request LaunchRequest) ([]*Instance, error)
	// Delete terminates the instance. An instance already gone is not an error:
	// deleting is idempotent.
	Delete(ctx context.Context, providerID string) error
	// Get returns the instance with the given provider id, one shutting down included (its
	// State says so), *NotFoundError if the cloud has none (or it has terminated).
	Get(ctx context.Context, providerID string) (*Instance, error)
	// List returns the instances this cluster owns that have not terminated,
	// including those launched for a node that never registered.
	List(ctx context.Context) ([]*Instance, error)
	// StalePrices returns nil while the offerings' prices are the cloud's current ones, and
	// a *StalePricesError while they come from an older or built-in catalogue because the
	// cloud's price APIs fail, so that the caller can say so on its objects.
	StalePrices() error
	// MarkUnavailable stops offering the offering for new launches for a while, as after an
	// insufficient capacity error: InstanceTypes reports it Available false and Create skips
	// it. Interruption handling calls it when the cloud reclaims a spot instance.
	MarkUnavailable(ctx context.Context, offering OfferingKey, reason string)
	ProviderValidator
}

// InstanceTypeLister is the part of an InstanceProvider that planning reads: `kubectl
// karpenter plan` reads instance types from the cloud or from a file.
type InstanceTypeLister interface {
	InstanceTypes(ctx context.Context, constraints Constraints) ([]*InstanceType, error)
}

// ProviderValidator defaults and validates a Provisioner's spec.provider block,
// the cloud-specific part of its constraints, without I/O or credentials.
type ProviderValidator interface {
	// DefaultProvider returns the block with the cloud's defaults filled in; it
	// may return a new block when provider is nil. A block it cannot parse is
	// returned unchanged, for ValidateProvider to reject.
	DefaultProvider(ctx context.Context, provider *runtime.RawExtension) *runtime.RawExtension
	// ValidateProvider returns the block's errors with paths relative to the
	// block (e.g. "subnetSelector"), unknown fields among them, or nil.
	ValidateProvider(ctx context.Context, provider *runtime.RawExtension) *apis.FieldError
}

// Constraints are what a Provisioner asks of the instances it launches. They
// are plain Kubernetes types, converted from the Provisioner by its controller,
// so that this package stays free of Karpenter's API packages.
type Constraints struct {
	// Requirements constrain the nodes' labels: the well-known instance type,
	// zone, capacity type, architecture and operating system labels select
	// instance types and offerings; requirements on other keys do not.
	Requirements []corev1.NodeSelectorRequirement
	// Provider is the Provisioner's spec.provider block, defaulted and valid; nil for a
	// NodePool.
	Provider *runtime.RawExtension
	// NodeClass is a NodePool's node class, in the cloud's own API kind (on AWS a
	// karpenter.k8s.aws/v1 EC2NodeClass), as read when its Ready condition was True: the cloud
	// launches from what its status resolved (subnets, security groups, images, instance
	// profile), never from its selectors. Nil for a Provisioner.
	NodeClass runtime.Object
}

// LaunchRequest asks for Count identical instances: one cloud call launches them all.
type LaunchRequest struct {
	// Count is the number of instances wanted; 0 means one.
	Count int
	// Candidates are the instance types and offerings the instance may be,
	// cheapest first: an offering without capacity falls through to the next.
	Candidates []Candidate
	// ProvisionerName names the Provisioner the instance is launched for, NodePoolName the
	// NodePool (one of the two is set); the cloud tags the instance with it.
	ProvisionerName string
	NodePoolName    string
	// Labels and Taints are registered with the node.
	Labels map[string]string
	Taints []corev1.Taint
	// Provider is the Provisioner's spec.provider block, defaulted and valid; nil for a
	// NodePool.
	Provider *runtime.RawExtension
	// NodeClass is the NodePool's node class, as in Constraints; nil for a Provisioner.
	NodeClass runtime.Object
	// IdempotencyKey names the launch: a Create retried with the same key and candidates (after
	// a crash or a lost answer) returns the instances the first one launched instead of more,
	// and when the candidates changed since, fails with *LaunchedBeforeError rather than launch
	// again. The instances are tagged with it (Instance.LaunchGroup). Empty means every call is a
	// new launch.
	IdempotencyKey string
}

// Wanted is the number of instances the request asks for.
func (r LaunchRequest) Wanted() int {
	return max(r.Count, 1)
}

// Candidate is one instance type in one of its offerings.
type Candidate struct {
	InstanceType *InstanceType
	Offering     Offering
}

// Key names the candidate's offering.
func (c Candidate) Key() OfferingKey {
	return OfferingKey{InstanceType: c.InstanceType.Name, Zone: c.Offering.Zone, CapacityType: c.Offering.CapacityType}
}

// OfferingKey names an offering of an instance type.
type OfferingKey struct {
	InstanceType, Zone, CapacityType string
}

// InstanceState is where an instance is in its life.
type InstanceState string

const (
	// InstanceStatePending is an instance launched but not yet running.
	InstanceStatePending InstanceState = "pending"
	// InstanceStateRunning is an instance running, its node maybe not yet registered.
	InstanceStateRunning InstanceState = "running"
	// InstanceStateShuttingDown is an instance the cloud is terminating: it no longer runs pods,
	// and may still hold what was attached to it (volumes, network interfaces) until it is
	// terminated.
	InstanceStateShuttingDown InstanceState = "shutting-down"
	// InstanceStateTerminated is an instance gone. Only Create answers with one: a launch
	// retried under an earlier launch's IdempotencyKey gets that launch's instances back, as the
	// cloud keeps the answer (EC2: for at least a day after they terminated).
	InstanceStateTerminated InstanceState = "terminated"
)

// ShutDown is whether an instance in the state no longer runs: shutting down or terminated.
func (s InstanceState) ShutDown() bool {
	return s == InstanceStateShuttingDown || s == InstanceStateTerminated
}

// GetRunning is Get for those who need the instance only while it runs: one shutting down is not
// found either (its pods stopped with it). A NodeClaim's termination, which waits for the
// instance to be gone, reads it with Get.
func GetRunning(ctx context.Context, instances InstanceProvider, providerID string) (*Instance, error) {
	instance, err := instances.Get(ctx, providerID)
	if err == nil && instance.State.ShutDown() {
		return nil, &NotFoundError{Resource: "instance " + providerID, Err: errors.New("it is shutting down")}
	}
	return instance, err
}

// Instance is a machine the cloud launched.
type Instance struct {
	// ProviderID is what the node's spec.providerID will be, e.g.
	// aws:///us-west-2a/i-0123456789abcdef0.
	ProviderID string
	// ID is the cloud's own id, e.g. i-0123456789abcdef0.
	ID           string
	InstanceType string
	Zone         string
	CapacityType string
	// NodeName is the name the node registers with (on AWS the private DNS name).
	NodeName string
	// ImageID is the image the instance booted (on AWS the AMI id).
	ImageID string
	// SubnetID and SecurityGroupIDs are the network the instance runs in (on AWS its subnet and
	// security groups); empty when the cloud does not say.
	SubnetID         string
	SecurityGroupIDs []string
	// LaunchGroup is the IdempotencyKey of the launch that made the instance, "" for one
	// launched without: a launch resumed after a crash finds the instances it made by it.
	LaunchGroup string
	LaunchTime  time.Time
	State       InstanceState
	// Labels are those the node will carry: the request's and the well-known labels of the
	// instance type and offering launched.
	Labels map[string]string
	// FellBackFrom, in Create's answer only, names the offerings tried before the one launched
	// that the cloud had no capacity for, with its reasons, so that the caller can say so; nil
	// when the first candidate launched.
	FellBackFrom *InsufficientCapacityError
}
