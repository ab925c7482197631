package clients

import (
	"context"
	"sync"
	"time"
)

// Querier evaluates an instant query at a time.
type Querier interface {
	QueryAt(ctx context.Context, query string, at time.Time) (float64, error)
}

// SharedQueries evaluates each query once per evaluation time, however many callers ask it:
// HorizontalAutoscalers evaluated at the same period boundary with the same query share one
// request to Prometheus and see the same value. It keeps the results of the two latest
// evaluation times only, so its size is bounded by the distinct queries of one period.
type SharedQueries struct {
	next Querier

	mu      sync.Mutex
	results map[sharedKey]*sharedResult
	latest  time.Time
}

type sharedKey struct {
	query string
	at    int64 // UnixNano: time.Time's monotonic reading and location must not split a key
}

type sharedResult struct {
	done  chan struct{}
	value float64
	err   error
}

// NewSharedQueries shares the queries of next.
func NewSharedQueries(next Querier) *SharedQueries {
	return &SharedQueries{next: next, results: map[sharedKey]*sharedResult{}}
}

// QueryAt answers from the result of the same query at the same time, running it if no caller
// has yet. A caller whose context ends stops waiting, the first one included; the query itself
// runs to its own timeout for the others. A zero time is the server's current time and is never shared.
func (s *SharedQueries) QueryAt(ctx context.Context, query string, at time.Time) (float64, error) {
	if at.IsZero() {
		return s.next.QueryAt(ctx, query, at)
	}
	key := sharedKey{query: query, at: at.UnixNano()}
	s.mu.Lock()
	if at.After(s.latest) {
		// A new evaluation time: keep the previous one, whose stragglers may still ask.
		for k := range s.results {
			if k.at < s.latest.UnixNano() {
				delete(s.results, k)
			}
		}
		s.latest = at
	}
	result, found := s.results[key]
	if !found {
		result = &sharedResult{done: make(chan struct{})}
		s.results[key] = result
	}
	s.mu.Unlock()
	if !found {
		// Not the first caller's context: its end must not fail the callers waiting. In a
		// goroutine of its own, so that the first caller too stops waiting when its context
		// ends (a manager stopping must not wait out a hung query's timeout).
		go func() {
			result.value, result.err = s.next.QueryAt(context.WithoutCancel(ctx), query, at)
			close(result.done)
		}()
	}
	select {
	case <-result.done:
		return result.value, result.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
