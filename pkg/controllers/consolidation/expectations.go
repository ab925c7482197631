package consolidation

import (
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
	mu       sync.Mutex
	launched map[string]time.Time
	deleted  map[string]time.Time
}

// Launched expects the node to appear.
func (e *Expectations) Launched(name string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.launched == nil {
		e.launched = map[string]time.Time{}
	}
	e.launched[name] = now
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
	for name, since := range e.launched {
		if _, ok := present[name]; ok || s.Now.Sub(since) > expectationTimeout {
			delete(e.launched, name)
		}
	}
	for name, since := range e.deleted {
		if !present[name] || s.Now.Sub(since) > expectationTimeout {
			delete(e.deleted, name)
		}
	}
	return len(e.launched) == 0 && len(e.deleted) == 0
}
