package clients

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/test/eventually"
)

// countingQuerier answers the number of times it was asked a query at a time, once released.
type countingQuerier struct {
	release chan struct{}
	mu      sync.Mutex
	asked   map[string]int
}

func (q *countingQuerier) QueryAt(_ context.Context, query string, at time.Time) (float64, error) {
	<-q.release
	q.mu.Lock()
	defer q.mu.Unlock()
	key := fmt.Sprintf("%s@%d", query, at.Unix())
	q.asked[key]++
	return float64(q.asked[key]), nil
}

func TestSharedQueries(t *testing.T) {
	boundary := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// asks are (query, seconds after boundary) pairs asked at once; zero time when negative.
		asks []ask
		want []float64
	}{
		{name: "one query at one time is run once for all", asks: []ask{{"a", 0}, {"a", 0}, {"a", 0}}, want: []float64{1, 1, 1}},
		{name: "different queries are not shared", asks: []ask{{"a", 0}, {"b", 0}}, want: []float64{1, 1}},
		{name: "different times are not shared", asks: []ask{{"a", 0}, {"a", 10}}, want: []float64{1, 1}},
		{name: "the server's current time is never shared", asks: []ask{{"a", -1}, {"a", -1}}, want: []float64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := &countingQuerier{release: make(chan struct{}), asked: map[string]int{}}
			shared := NewSharedQueries(next)
			got := make([]float64, len(tc.asks))
			var wg sync.WaitGroup
			for i, a := range tc.asks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], _ = shared.QueryAt(context.Background(), a.query, a.time(boundary))
				}()
			}
			close(next.release)
			wg.Wait()
			// Queries not shared answer 1, 2, ... in whichever order they ran.
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("answers %v, want %v", got, tc.want)
			}
		})
	}
}

type ask struct {
	query   string
	seconds int
}

func (a ask) time(boundary time.Time) time.Time {
	if a.seconds < 0 {
		return time.Time{}
	}
	return boundary.Add(time.Duration(a.seconds) * time.Second)
}

func TestSharedQueriesKeepsTwoTimes(t *testing.T) {
	next := &countingQuerier{release: make(chan struct{}), asked: map[string]int{}}
	close(next.release)
	shared := NewSharedQueries(next)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{t0, t0.Add(10 * time.Second), t0, t0.Add(20 * time.Second)} {
		if _, err := shared.QueryAt(context.Background(), "a", at); err != nil {
			t.Fatal(err)
		}
	}
	// t0 was still kept when asked again; the third time evicted it.
	if n := len(shared.results); n != 2 {
		t.Errorf("%d results kept, want those of the two latest times", n)
	}
	if got := next.asked[fmt.Sprintf("a@%d", t0.Unix())]; got != 1 {
		t.Errorf("the query at t0 ran %d times, want once", got)
	}
}

func TestSharedQueriesWaiterLeaves(t *testing.T) {
	next := &countingQuerier{release: make(chan struct{}), asked: map[string]int{}}
	shared := NewSharedQueries(next)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	first := make(chan float64)
	go func() {
		v, _ := shared.QueryAt(context.Background(), "a", at)
		first <- v
	}()
	eventually.Holds(t, "the first caller runs the query", func() (bool, string, error) {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return len(shared.results) == 1, fmt.Sprintf("%d queries running", len(shared.results)), nil
	})
	// The second caller waits on the first's query, then gives up.
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error)
	go func() {
		_, err := shared.QueryAt(ctx, "a", at)
		waiting <- err
	}()
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiter that left got %v, want its context's error", err)
	}
	close(next.release)
	if v := <-first; v != 1 {
		t.Errorf("the first caller got %v, want 1", v)
	}
}
