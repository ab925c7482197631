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
// While a burst holds a batch open past its idle gap, it also asks for an early pass every
// idle gap: kube-scheduler marks a burst of a thousand pods over several seconds, and the
// pods marked first would otherwise wait for the last (see Controller.provision).
type batcher struct {
	clock  clock.Clock
	window window

	mu          sync.Mutex
	pending     sets.Set[string]
	first, last time.Time
	// early is when the open batch's last early pass was asked for, or when it opened;
	// earlyPasses is whether the batcher asks for early passes at all (--batch-early-launch).
	early       time.Time
	earlyPasses bool
	// arrived has room for one signal: a pod arriving while one is unread adds nothing the
	// waiter would not see.
	arrived chan struct{}
}

func newBatcher(clk clock.Clock, w window, earlyPasses bool) *batcher {
	return &batcher{clock: clk, window: w, earlyPasses: earlyPasses, pending: sets.New[string](), arrived: make(chan struct{}, 1)}
}

// add puts a pod, by key, in the open batch, opening one if none is. A pod added again (it
// was not provisioned for, or is still waiting for its node) counts once, and does not hold
// the batch open: kube-scheduler updates each pod it retries, and a burst of a thousand pods
// would otherwise keep its own batch open to the maximum window.
func (b *batcher) add(key string) {
	b.mu.Lock()
	if b.pending.Has(key) {
		b.mu.Unlock()
		return
	}
	now := b.clock.Now()
	if b.pending.Len() == 0 {
		b.first, b.early = now, now
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

// pass is what wait returns: the batch closed, or an early pass of a batch still open.
type pass struct {
	// size is how many pods the batch gathered so far.
	size int
	// early is true while the batch is still open.
	early bool
}

// wait blocks until a batch has opened and closed, or until an early pass of it is due, and
// returns the pass; ok is false when ctx ended first. An early pass is due an idle gap after
// the batch opened or after its last early pass, as long as that comes before the batch
// closes: a batch that goes idle closes without one.
func (b *batcher) wait(ctx context.Context) (p pass, ok bool) {
	b.mu.Lock()
	open := b.pending.Len() > 0
	b.mu.Unlock()
	if !open {
		// A batch opens with a pod's arrival, or a poke closes an empty one at once.
		select {
		case <-b.arrived:
		case <-ctx.Done():
			return pass{}, false
		}
	}
	for {
		// A signal already waiting is for a pod the state read below includes; left there, it
		// would wake the select at once, and a timer made after that read could miss a clock
		// step taken in between.
		select {
		case <-b.arrived:
		default:
		}
		b.mu.Lock()
		now := b.clock.Now()
		closes, early := b.window.closesAt(b.first, b.last), b.early.Add(b.window.idle)
		if !now.Before(closes) {
			p = pass{size: b.pending.Len()}
			b.pending = sets.New[string]()
			b.mu.Unlock()
			return p, true
		}
		earlyDue := b.earlyPasses && early.Before(closes)
		if earlyDue && !now.Before(early) {
			b.early = now
			p = pass{size: b.pending.Len(), early: true}
			b.mu.Unlock()
			return p, true
		}
		next := closes
		if earlyDue {
			next = early
		}
		b.mu.Unlock()
		timer := b.clock.NewTimer(next.Sub(now))
		select {
		case <-b.arrived:
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return pass{}, false
		}
		timer.Stop()
	}
}
