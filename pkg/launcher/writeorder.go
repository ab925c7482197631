package launcher

import (
	"context"
	"sync"
)

// writeOrder puts a burst's NodeClaim creations ahead of its records. The API server's writes
// are what a burst's launches wait on (about 500 a second on two cores), and a group launches
// only once all its NodeClaims exist: each record (two writes) made while other groups still
// create theirs delays their launches. So a record first waits for the creations asked before
// it, none asked after, so that a stream of launches never starves a record. See
// docs/benchmarks.md ("NodeClaims created before records").
type writeOrder struct {
	mu sync.Mutex
	// creating holds a channel for each CreateNodeClaims call not yet ended, closed when it ends.
	creating map[chan struct{}]struct{}
}

// beginCreate marks NodeClaim creations as asked; the function returned marks them ended.
func (w *writeOrder) beginCreate() (end func()) {
	ended := make(chan struct{})
	w.mu.Lock()
	if w.creating == nil {
		w.creating = map[chan struct{}]struct{}{}
	}
	w.creating[ended] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.creating, ended)
		w.mu.Unlock()
		close(ended)
	}
}

// asked is the creations asked so far, for a record to wait for.
func (w *writeOrder) asked() creations {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(creations, 0, len(w.creating))
	for ended := range w.creating {
		out = append(out, ended)
	}
	return out
}

// creations are NodeClaim creations asked, each a channel closed when it ends.
type creations []chan struct{}

// wait returns once every creation has ended, or ctx has.
func (c creations) wait(ctx context.Context) {
	for _, ended := range c {
		select {
		case <-ended:
		case <-ctx.Done():
			return
		}
	}
}
