package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// Default batch windows, as upstream Karpenter's: a burst of pods created together (a
// Deployment scaling up) arrives within a second and is planned as one batch, and a steady
// trickle is still planned at least every ten seconds.
const (
	DefaultBatchIdleDuration = time.Second
	DefaultBatchMaxDuration  = 10 * time.Second
)

// window is when a batch closes: idle after its last pod arrived, or max after its first,
// whichever is first.
type window struct {
	idle, max time.Duration
}

func (w window) closesAt(first, last time.Time) time.Time {
	idle, max := last.Add(w.idle), first.Add(w.max)
	if max.Before(idle) {
		return max
	}
	return idle
}

// batcher gathers the pods that became provisionable into batches of the window's length.
type batcher struct {
	clock  clock.Clock
	window window

	mu          sync.Mutex
	pending     sets.Set[string]
	first, last time.Time
	// arrived has room for one signal: a pod arriving while one is unread adds nothing the
	// waiter would not see.
	arrived chan struct{}
}

func newBatcher(clk clock.Clock, w window) *batcher {
	return &batcher{clock: clk, window: w, pending: sets.New[string](), arrived: make(chan struct{}, 1)}
}

// add puts a pod, by key, in the open batch, opening one if none is. A pod added again (it
// was not provisioned for, or is still waiting for its node) counts once.
func (b *batcher) add(key string) {
	b.mu.Lock()
	now := b.clock.Now()
	if b.pending.Len() == 0 {
		b.first = now
	}
	b.last = now
	b.pending.Insert(key)
	b.mu.Unlock()
	b.poke()
}

// poke closes a batch at once, empty if no pod is pending: a pass retries what the last one
// could not launch.
func (b *batcher) poke() {
	select {
	case b.arrived <- struct{}{}:
	default:
	}
}

// wait blocks until a batch has opened and closed, and returns how many pods it gathered; ok
// is false when ctx ended first.
func (b *batcher) wait(ctx context.Context) (size int, ok bool) {
	select {
	case <-b.arrived:
	case <-ctx.Done():
		return 0, false
	}
	for {
		b.mu.Lock()
		remaining := b.window.closesAt(b.first, b.last).Sub(b.clock.Now())
		if remaining <= 0 {
			size = b.pending.Len()
			b.pending = sets.New[string]()
			b.mu.Unlock()
			return size, true
		}
		b.mu.Unlock()
		timer := b.clock.NewTimer(remaining)
		select {
		case <-b.arrived:
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return 0, false
		}
		timer.Stop()
	}
}
