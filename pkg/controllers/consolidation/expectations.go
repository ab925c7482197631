package consolidation

import (
	"slices"
	"sync"
	"time"
)

// expectationTimeout drops an effect the cache never showed, such as a node deleted by
// someone else before it was ever seen, so that passes do not wait for it forever.
const expectationTimeout = time.Minute

// Expectations are the effects of a loop's last actions, which the informer cache may not show
// yet: a pass on a snapshot without them would act on the same nodes again, launching a second
// replacement or counting a deleted node's room.
type Expectations struct {
	mu sync.Mutex
	// launched are the names a launched node may show as, each launch's once: its Node's, or
	// its NodeClaim's while the snapshot stands a node in for the NodeClaim until it registers.
	launched map[*launchExpectation]bool
	deleted  map[string]time.Time
}

type launchExpectation struct {
	names []string
	since time.Time
}

// Launched expects a node to appear as one of names.
func (e *Expectations) Launched(now time.Time, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.launched == nil {
		e.launched = map[*launchExpectation]bool{}
	}
	e.launched[&launchExpectation{names: names, since: now}] = true
}

// Deleted expects the node to be gone or being deleted.
func (e *Expectations) Deleted(name string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.deleted == nil {
		e.deleted = map[string]time.Time{}
	}
	e.deleted[name] = now
}

// Met forgets the effects the snapshot shows and says whether none is still awaited.
func (e *Expectations) Met(s *Snapshot) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	present := map[string]bool{}
	for _, n := range s.Nodes {
		present[n.Node.Name] = n.Node.DeletionTimestamp == nil
	}
	for l := range e.launched {
		if slices.ContainsFunc(l.names, func(name string) bool { _, ok := present[name]; return ok }) || s.Now.Sub(l.since) > expectationTimeout {
			delete(e.launched, l)
		}
	}
	for name, since := range e.deleted {
		if !present[name] || s.Now.Sub(since) > expectationTimeout {
			delete(e.deleted, name)
		}
	}
	return len(e.launched) == 0 && len(e.deleted) == 0
}
