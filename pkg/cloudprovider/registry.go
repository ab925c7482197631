package cloudprovider

import (
	"context"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
)

// NodeGroupConstructor builds a NodeGroup from its id without I/O.
type NodeGroupConstructor func(id string) (NodeGroup, error)

// QueueConstructor builds a Queue from its id without I/O.
type QueueConstructor func(id string) (Queue, error)

// IDValidator checks that an id is well formed for its type, without I/O or
// credentials, returning *InvalidIDError if not.
type IDValidator func(id string) error

// Registry is the one place the clouds' type strings meet: each cloud registers
// how to validate the ids of its types (which the webhook needs) and, where it
// has credentials, how to build them (which the controllers need). It is a
// Factory and a Validator.
type Registry struct {
	mu                sync.RWMutex
	nodeGroups        map[string]NodeGroupConstructor
	queues            map[string]QueueConstructor
	nodeGroupIDs      map[string]IDValidator
	queueIDs          map[string]IDValidator
	provisionerBlocks ProviderValidator
}

var (
	_ Factory   = (*Registry)(nil)
	_ Validator = (*Registry)(nil)
)

func NewRegistry() *Registry {
	return &Registry{
		nodeGroups:   map[string]NodeGroupConstructor{},
		queues:       map[string]QueueConstructor{},
		nodeGroupIDs: map[string]IDValidator{},
		queueIDs:     map[string]IDValidator{},
	}
}

// RegisterNodeGroup makes typ resolvable by NodeGroupFor, replacing any earlier constructor.
func (r *Registry) RegisterNodeGroup(typ string, c NodeGroupConstructor) {
	register(r, r.nodeGroups, typ, c)
}

// RegisterQueue makes typ resolvable by QueueFor, replacing any earlier constructor.
func (r *Registry) RegisterQueue(typ string, c QueueConstructor) {
	register(r, r.queues, typ, c)
}

// RegisterNodeGroupID makes ValidateNodeGroupID check ids of typ with v,
// replacing any earlier validator.
func (r *Registry) RegisterNodeGroupID(typ string, v IDValidator) {
	register(r, r.nodeGroupIDs, typ, v)
}

// RegisterQueueID makes ValidateQueueID check ids of typ with v, replacing any
// earlier validator.
func (r *Registry) RegisterQueueID(typ string, v IDValidator) {
	register(r, r.queueIDs, typ, v)
}

// RegisterProvider makes DefaultProvider and ValidateProvider delegate to v,
// the cloud that launches the Provisioners' instances.
func (r *Registry) RegisterProvider(v ProviderValidator) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.provisionerBlocks = v
}

func (r *Registry) NodeGroupFor(typ, id string) (NodeGroup, error) {
	c, err := registered(r, r.nodeGroups, typ)
	if err != nil {
		return nil, err
	}
	return c(id)
}

func (r *Registry) QueueFor(typ, id string) (Queue, error) {
	c, err := registered(r, r.queues, typ)
	if err != nil {
		return nil, err
	}
	return c(id)
}

// ValidateNodeGroupID returns the registered validator's error as is: it names
// the type and the id already, and admission shows it to the user verbatim.
func (r *Registry) ValidateNodeGroupID(typ, id string) error {
	v, err := registered(r, r.nodeGroupIDs, typ)
	if err != nil {
		return err
	}
	return v(id)
}

// ValidateQueueID is ValidateNodeGroupID for queues.
func (r *Registry) ValidateQueueID(typ, id string) error {
	v, err := registered(r, r.queueIDs, typ)
	if err != nil {
		return err
	}
	return v(id)
}

// DefaultProvider returns provider unchanged when no cloud registered for Provisioners.
func (r *Registry) DefaultProvider(ctx context.Context, provider *runtime.RawExtension) *runtime.RawExtension {
	v := r.providerValidator()
	if v == nil {
		return provider
	}
	return v.DefaultProvider(ctx, provider)
}

// ValidateProvider accepts any block when no cloud registered for Provisioners,
// as the schemaless CRD field does.
func (r *Registry) ValidateProvider(ctx context.Context, provider *runtime.RawExtension) *apis.FieldError {
	v := r.providerValidator()
	if v == nil {
		return nil
	}
	return v.ValidateProvider(ctx, provider)
}

func (r *Registry) providerValidator() ProviderValidator {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.provisionerBlocks
}

// NodeGroupTypes lists the node group types registered, for ids or
// construction, sorted.
func (r *Registry) NodeGroupTypes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return union(sortedTypes(r.nodeGroups), sortedTypes(r.nodeGroupIDs))
}

// QueueTypes lists the queue types registered, for ids or construction, sorted.
func (r *Registry) QueueTypes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return union(sortedTypes(r.queues), sortedTypes(r.queueIDs))
}

func register[V any](r *Registry, registrations map[string]V, typ string, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	registrations[typ] = v
}

// registered returns typ's registration, or an *UnsupportedTypeError naming
// the types registrations has. The lock is released before the caller builds
// or validates, so a constructor may use the Registry itself.
func registered[V any](r *Registry, registrations map[string]V, typ string) (V, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := registrations[typ]
	if !ok {
		return v, &UnsupportedTypeError{Type: typ, Supported: sortedTypes(registrations)}
	}
	return v, nil
}

func sortedTypes[V any](registrations map[string]V) []string {
	return slices.Sorted(maps.Keys(registrations))
}

// union merges sorted lists into one, sorted and without duplicates.
func union(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(append(a, b...))))
}
