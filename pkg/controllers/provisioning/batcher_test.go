package provisioning

import (
	"context"
	"fmt"
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
	b := newBatcher(clk, window{idle: time.Second, max: 10 * time.Second}, false)
	for _, key := range []string{"a", "b", "a", "c"} {
		b.add(key)
	}
	sizes := make(chan int, 1)
	go func() {
		p, _ := b.wait(context.Background())
		sizes <- p.size
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
		p, _ := b.wait(context.Background())
		sizes <- p.size
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
	b := newBatcher(clocktesting.NewFakeClock(time.Now()), window{idle: time.Second, max: 10 * time.Second}, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := b.wait(ctx); ok {
		t.Error("wait returned a batch after its context ended")
	}
}

func TestBatcherPokeRunsAnEmptyBatchAtOnce(t *testing.T) {
	b := newBatcher(clocktesting.NewFakeClock(time.Now()), window{idle: time.Second, max: 10 * time.Second}, false)
	b.poke()
	if p, ok := b.wait(context.Background()); !ok || p.size != 0 || p.early {
		t.Errorf("a poke gave %+v (%v), want an empty closed batch at once", p, ok)
	}
}

// TestBatcherUpdatesOfAPodDoNotHoldTheBatchOpen: kube-scheduler updates each pod it retries,
// and those updates arrive as the pod again; only new pods restart the idle gap.
func TestBatcherUpdatesOfAPodDoNotHoldTheBatchOpen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBatcher(clk, window{idle: time.Second, max: 10 * time.Second}, false)
	b.add("a")
	clk.Step(900 * time.Millisecond)
	b.add("a") // an update of the same pod, 0.9 s later
	if got := b.window.closesAt(b.first, b.last).Sub(b.first); got != time.Second {
		t.Errorf("the batch closes %s after it opened, want 1s: the update held it open", got)
	}
	b.add("b") // a new pod restarts the idle gap
	if got := b.window.closesAt(b.first, b.last).Sub(b.first); got != 1900*time.Millisecond {
		t.Errorf("the batch closes %s after it opened, want 1.9s", got)
	}
}

// TestBatcherEarlyPasses: a burst that holds a batch open past its idle gap gets an early pass
// every idle gap, and the batch still closes as its window says; a batch that goes idle closes
// without one; a batcher without early passes has none. (Pods are added while nothing waits,
// so no wakeup races the fake clock.)
func TestBatcherEarlyPasses(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBatcher(clk, window{idle: time.Second, max: 10 * time.Second}, true)
	wait := func() pass {
		p, ok := b.wait(context.Background())
		if !ok {
			t.Fatal("wait ended without a pass")
		}
		return p
	}
	// Pods every 400 ms keep the batch open: early passes at 1 s and 2 s.
	b.add("a")
	for i, want := range []pass{{size: 3, early: true}, {size: 5, early: true}} {
		for range 2 {
			clk.Step(400 * time.Millisecond)
			b.add(fmt.Sprint(clk.Now().UnixMilli()))
		}
		clk.Step(200 * time.Millisecond)
		if got := wait(); got != want {
			t.Fatalf("pass %d: %+v, want %+v", i, got, want)
		}
	}
	// Then the burst ends: the batch closes an idle gap after its last pod (at 1.8 s), with
	// every pod.
	clk.Step(800 * time.Millisecond)
	if got := wait(); got != (pass{size: 5}) {
		t.Fatalf("closing pass %+v, want the batch of 5 closed", got)
	}
	// waitOneSecond is the pass a wait gives once the clock moves on a second.
	waitOneSecond := func() pass {
		passes := make(chan pass, 1)
		go func() {
			p, _ := b.wait(context.Background())
			passes <- p
		}()
		eventually.Holds(t, "the batcher waits for its window", func() (bool, string, error) {
			return clk.HasWaiters(), "", nil
		}, eventually.Interval(time.Millisecond))
		clk.Step(time.Second)
		return <-passes
	}
	// A lone pod's batch closes after the idle gap, with no early pass on the way.
	b.add("lone")
	if got := waitOneSecond(); got != (pass{size: 1}) {
		t.Errorf("a lone pod gave %+v, want its batch closed", got)
	}
	// Without early passes, the same burst is one batch.
	b = newBatcher(clk, window{idle: time.Second, max: 10 * time.Second}, false)
	b.add("a")
	for range 5 {
		clk.Step(400 * time.Millisecond)
		b.add(fmt.Sprint(clk.Now().UnixMilli()))
	}
	if got := waitOneSecond(); got != (pass{size: 6}) {
		t.Errorf("without early passes the burst gave %+v, want one batch of 6", got)
	}
}
