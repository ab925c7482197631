// Package fake is an in-memory cloudprovider for controller unit tests. Groups
// and queues are created by the test, instances by the code under test from a
// catalogue of instance types; their state changes only when the test or the
// code under test changes it.
package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Factory resolves ids to the groups and queues a test added. Any type string
// is accepted as long as the id was added under it.
type Factory struct {
	mu         sync.Mutex
	nodeGroups map[key]*NodeGroup
	queues     map[key]*Queue
}

type key struct{ typ, id string }

var _ cloudprovider.Factory = (*Factory)(nil)

func NewFactory() *Factory {
	return &Factory{nodeGroups: map[key]*NodeGroup{}, queues: map[key]*Queue{}}
}

// AddNodeGroup registers a group under typ/id and returns it for the test to drive. The
// first registration names the group (its ID); adding it again under another id makes an
// alias, as a name and an ARN are for a cloud group.
func (f *Factory) AddNodeGroup(typ, id string, g *NodeGroup) *NodeGroup {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodeGroups[key{typ, id}] = g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.id == "" {
		g.id = typ + "/" + id
	}
	return g
}

// AddQueue registers a queue under typ/id and returns it for the test to drive.
func (f *Factory) AddQueue(typ, id string, q *Queue) *Queue {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues[key{typ, id}] = q
	return q
}

func (f *Factory) NodeGroupFor(typ, id string) (cloudprovider.NodeGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if g, ok := f.nodeGroups[key{typ, id}]; ok {
		return g, nil
	}
	return nil, &cloudprovider.NotFoundError{Resource: fmt.Sprintf("%s %s", typ, id), Err: fmt.Errorf("not added to the fake factory")}
}

func (f *Factory) QueueFor(typ, id string) (cloudprovider.Queue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.queues[key{typ, id}]; ok {
		return q, nil
	}
	return nil, &cloudprovider.NotFoundError{Resource: fmt.Sprintf("%s %s", typ, id), Err: fmt.Errorf("not added to the fake factory")}
}

// NodeGroup is an in-memory node group. Setting the desired size does not
// change Replicas: the test decides when instances "arrive" (SetReplicas),
// which keeps controller tests deterministic.
type NodeGroup struct {
	mu       sync.Mutex
	id       string
	granted  string
	desired  int32
	replicas int32
	min, max int32
	busy     string
	// err, when set, is returned by every call (e.g. an *AccessDeniedError).
	err error
	// setCalls records every value passed to SetDesiredReplicas, accepted or not.
	setCalls []int32
}

var _ cloudprovider.NodeGroup = (*NodeGroup)(nil)

// NewNodeGroup returns a stable group of size replicas within [min, max].
func NewNodeGroup(replicas, min, max int32) *NodeGroup {
	return &NodeGroup{desired: replicas, replicas: replicas, min: min, max: max}
}

func (g *NodeGroup) ID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.id
}

// GrantTo tags the group with the namespace that may drive it ("" removes the tag) and
// returns the group.
func (g *NodeGroup) GrantTo(namespace string) *NodeGroup {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.granted = namespace
	return g
}

func (g *NodeGroup) Status(_ context.Context) (cloudprovider.NodeGroupStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return cloudprovider.NodeGroupStatus{}, g.err
	}
	st := cloudprovider.NodeGroupStatus{
		DesiredReplicas: g.desired, Replicas: g.replicas, MinReplicas: g.min, MaxReplicas: g.max,
		Stable: g.busy == "" && g.desired == g.replicas, GrantedNamespace: g.granted,
	}
	switch {
	case g.busy != "":
		st.Message = g.busy
	case !st.Stable:
		st.Message = fmt.Sprintf("%d of %d desired replicas serving", g.replicas, g.desired)
	}
	return st, nil
}

func (g *NodeGroup) SetDesiredReplicas(_ context.Context, replicas int32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setCalls = append(g.setCalls, replicas)
	if g.err != nil {
		return g.err
	}
	if g.busy != "" {
		return &cloudprovider.BusyError{Resource: "fake node group", Reason: g.busy}
	}
	if replicas < g.min || replicas > g.max {
		return &cloudprovider.OutOfBoundsError{Resource: "fake node group", Requested: replicas, Min: g.min, Max: g.max}
	}
	g.desired = replicas
	return nil
}

// SetReplicas sets how many instances are serving, as if they launched or terminated.
func (g *NodeGroup) SetReplicas(n int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.replicas = n
}

// Converge makes the serving count match the desired size.
func (g *NodeGroup) Converge() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.replicas = g.desired
}

// SetDesiredOutOfBand changes the desired size as someone outside Karpenter would.
func (g *NodeGroup) SetDesiredOutOfBand(n int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.desired = n
}

// SetBusy makes the group refuse resizes with *BusyError and report
// not-stable with reason; an empty reason clears it.
func (g *NodeGroup) SetBusy(reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy = reason
}

// SetError makes every call fail with err; nil clears it.
func (g *NodeGroup) SetError(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.err = err
}

// SetCalls returns every value passed to SetDesiredReplicas so far.
func (g *NodeGroup) SetCalls() []int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int32(nil), g.setCalls...)
}

// Queue is an in-memory queue.
type Queue struct {
	mu     sync.Mutex
	length int64
	age    time.Duration
	noData bool
	err    error
	ageErr error
}

var _ cloudprovider.Queue = (*Queue)(nil)

func NewQueue(length int64, oldestMessageAge time.Duration) *Queue {
	return &Queue{length: length, age: oldestMessageAge}
}

func (q *Queue) Length(_ context.Context) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return 0, q.err
	}
	return q.length, nil
}

func (q *Queue) OldestMessageAge(_ context.Context) (time.Duration, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return 0, q.err
	}
	if q.ageErr != nil {
		return 0, q.ageErr
	}
	if q.noData {
		return 0, fmt.Errorf("fake queue, %w", cloudprovider.ErrNoData)
	}
	return q.age, nil
}

// Set changes the queue's backlog.
func (q *Queue) Set(length int64, oldestMessageAge time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.length, q.age, q.noData = length, oldestMessageAge, false
}

// SetNoData makes OldestMessageAge report ErrNoData until the next Set.
func (q *Queue) SetNoData() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.noData = true
}

// SetError makes every call fail with err; nil clears it.
func (q *Queue) SetError(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.err = err
}

// SetOldestMessageAgeError makes OldestMessageAge alone fail with err, as an SQS queue's does
// when CloudWatch fails; nil clears it.
func (q *Queue) SetOldestMessageAgeError(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ageErr = err
}
