// Package eventually waits in tests for state written asynchronously: by controllers, the
// apiserver, kwok or Prometheus.
package eventually

import (
	"fmt"
	"testing"
	"time"
)

const (
	// DefaultInterval is short against a reconcile, long against a client round trip.
	DefaultInterval = 200 * time.Millisecond
	// DefaultTimeout covers a few reconciles on a loaded two-core machine.
	DefaultTimeout = 30 * time.Second
)

// Condition reports whether the awaited state holds and, for the failure message, what it
// saw (an empty seen keeps what an earlier check saw); an error is what kept it from looking,
// and the condition is checked again.
type Condition func() (done bool, seen string, err error)

// Option overrides a default of Holds.
type Option func(*settings)

type settings struct {
	interval, timeout time.Duration
}

// Interval sets how long Holds waits between two checks.
func Interval(interval time.Duration) Option {
	return func(s *settings) { s.interval = interval }
}

// Timeout sets how long Holds checks before it fails the test.
func Timeout(timeout time.Duration) Option {
	return func(s *settings) { s.timeout = timeout }
}

// Holds checks condition at once and then every interval until it reports done. If it does
// not within the timeout, or the test's context ends first, Holds fails the test with what,
// what the condition last saw and its last error.
func Holds(t testing.TB, what string, condition Condition, options ...Option) {
	t.Helper()
	s := settings{interval: DefaultInterval, timeout: DefaultTimeout}
	for _, option := range options {
		option(&s)
	}
	deadline := time.NewTimer(s.timeout)
	defer deadline.Stop()
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	var (
		seen    string
		lastErr error
	)
	for {
		done, saw, err := condition()
		if done && err == nil {
			return
		}
		if saw != "" {
			seen = saw
		}
		lastErr = err
		select {
		case <-ticker.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %s; %s", what, s.timeout, lastWords(seen, lastErr))
			return
		case <-t.Context().Done():
			t.Fatalf("%s: the test ended first; %s", what, lastWords(seen, lastErr))
			return
		}
	}
}

// lastWords is what a failure reports of the last checks.
func lastWords(seen string, err error) string {
	message := "last seen: " + seen
	if seen == "" {
		message = "last seen: nothing"
	}
	if err != nil {
		message += fmt.Sprintf(" (last error: %v)", err)
	}
	return message
}
