package launcher

import (
	"context"
	"testing"
	"time"
)

// TestARecordWaitsOnlyForTheCreationsAskedBeforeIt: a record waits for the creations asked
// before it and not for one asked after, so a stream of launches never starves it; with none
// asked it does not wait.
func TestARecordWaitsOnlyForTheCreationsAskedBeforeIt(t *testing.T) {
	var w writeOrder
	w.asked().wait(t.Context())

	endFirst := w.beginCreate()
	before := w.asked()
	endLater := w.beginCreate()
	defer endLater()
	if len(before) != 1 {
		t.Fatalf("a record would wait for %d creations, want the one asked before it", len(before))
	}
	select {
	case <-before[0]:
		t.Fatal("the creation asked before the record ended before it did")
	default:
	}
	endFirst()
	returns(t, waited(t.Context(), before), "the record still waits, for the creation asked after it")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	returns(t, waited(ctx, w.asked()), "a record whose context ended still waits")
}

// returns fails the test when done is not closed soon.
func returns(t *testing.T, done <-chan struct{}, failure string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
	}
}

// waited is closed once c.wait returns.
func waited(ctx context.Context, c creations) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		c.wait(ctx)
		close(out)
	}()
	return out
}
