package provisioning

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/test/eventually"
)

func TestWindowClosesAt(t *testing.T) {
	w := window{idle: time.Second, max: 10 * time.Second}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		last   time.Duration
		closes time.Duration
	}{
		{"one pod: the idle gap", 0, time.Second},
		{"a burst: the gap after its last pod", 1500 * time.Millisecond, 2500 * time.Millisecond},
		{"a trickle: the maximum", 9500 * time.Millisecond, 10 * time.Second},
		{"the maximum even just before it", 9 * time.Second, 10 * time.Second},
	} {
		if got := w.closesAt(start, start.Add(tc.last)).Sub(start); got != tc.closes {
			t.Errorf("%s: closes at +%s, want +%s", tc.name, got, tc.closes)
		}
	}
}

// TestBatcherGathersABatch runs the batcher on a fake clock: pods added before the window
// closes are one batch, counted once each, and the batch is returned once the clock passes
// the window.
func TestBatcherGathersABatch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBatcher(clk, window{idle: time.Second, max: 10 * time.Second})
	for _, key := range []string{"a", "b", "a", "c"} {
		b.add(key)
	}
	sizes := make(chan int, 1)
	go func() {
		size, _ := b.wait(context.Background())
		sizes <- size
	}()
	eventually.Holds(t, "the batcher waits for its window", func() (bool, string, error) {
		return clk.HasWaiters(), "", nil
	}, eventually.Interval(time.Millisecond))
	clk.Step(time.Second)
	if size := <-sizes; size != 3 {
		t.Errorf("a batch of %d pods, want 3", size)
	}
	// The next batch starts empty.
	b.add("d")
	go func() {
		size, _ := b.wait(context.Background())
		sizes <- size
	}()
	eventually.Holds(t, "the batcher waits for its window", func() (bool, string, error) {
		return clk.HasWaiters(), "", nil
	}, eventually.Interval(time.Millisecond))
	clk.Step(time.Second)
	if size := <-sizes; size != 1 {
		t.Errorf("a batch of %d pods, want 1", size)
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	b := newBatcher(clocktesting.NewFakeClock(time.Now()), window{idle: time.Second, max: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := b.wait(ctx); ok {
		t.Error("wait returned a batch after its context ended")
	}
}

func TestBatcherPokeRunsAnEmptyBatchAtOnce(t *testing.T) {
	b := newBatcher(clocktesting.NewFakeClock(time.Now()), window{idle: time.Second, max: 10 * time.Second})
	b.poke()
	if size, ok := b.wait(context.Background()); !ok || size != 0 {
		t.Errorf("a poke gave a batch of %d (%v), want an empty one at once", size, ok)
	}
}
