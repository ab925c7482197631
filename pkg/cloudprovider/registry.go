package cloudprovider

import (
	"maps"
	"slices"
	"sync"
)

// NodeGroupConstructor builds a NodeGroup from its id without I/O.
type NodeGroupConstructor func(id string) (NodeGroup, error)

// QueueConstructor builds a Queue from its id without I/O.
type QueueConstructor func(id string) (Queue, error)

// Registry is a Factory that dispatches on the type string to constructors
// registered by each cloud implementation.
type Registry struct {
	mu         sync.RWMutex
	nodeGroups map[string]NodeGroupConstructor
	queues     map[string]QueueConstructor
}

var _ Factory = (*Registry)(nil)

func NewRegistry() *Registry {
	return &Registry{
		nodeGroups: map[string]NodeGroupConstructor{},
		queues:     map[string]QueueConstructor{},
	}
}

// RegisterNodeGroup makes typ resolvable by NodeGroupFor, replacing any earlier constructor.
func (r *Registry) RegisterNodeGroup(typ string, c NodeGroupConstructor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodeGroups[typ] = c
}

// RegisterQueue makes typ resolvable by QueueFor, replacing any earlier constructor.
func (r *Registry) RegisterQueue(typ string, c QueueConstructor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[typ] = c
}

func (r *Registry) NodeGroupFor(typ, id string) (NodeGroup, error) {
	r.mu.RLock()
	c, ok := r.nodeGroups[typ]
	r.mu.RUnlock()
	if !ok {
		return nil, &UnsupportedTypeError{Type: typ, Supported: r.NodeGroupTypes()}
	}
	return c(id)
}

func (r *Registry) QueueFor(typ, id string) (Queue, error) {
	r.mu.RLock()
	c, ok := r.queues[typ]
	r.mu.RUnlock()
	if !ok {
		return nil, &UnsupportedTypeError{Type: typ, Supported: r.QueueTypes()}
	}
	return c(id)
}

// NodeGroupTypes lists the registered node group types, sorted.
func (r *Registry) NodeGroupTypes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.nodeGroups))
}

// QueueTypes lists the registered queue types, sorted.
func (r *Registry) QueueTypes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.queues))
}
