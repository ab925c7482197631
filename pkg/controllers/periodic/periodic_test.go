package periodic_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/controllers/periodic"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestLoop runs loops on a fake clock and records when each pass ran, counted from the start.
func TestLoop(t *testing.T) {
	failing := errors.New("failing")
	for _, tc := range []struct {
		name string
		loop periodic.Loop
		// results are what the passes return in turn; the loop is stopped after the last.
		results []error
		want    []time.Duration
	}{
		{
			name:    "a pass at once, then every period",
			loop:    periodic.Loop{Period: time.Minute},
			results: []error{nil, failing, nil},
			want:    []time.Duration{0, time.Minute, 2 * time.Minute},
		},
		{
			name:    "delayed: the first pass waits a period too",
			loop:    periodic.Loop{Period: 30 * time.Second, Delayed: true},
			results: []error{nil, nil},
			want:    []time.Duration{30 * time.Second, time.Minute},
		},
		{
			name: "failures back off, doubling up to the maximum; a success starts over",
			loop: periodic.Loop{MinRetryDelay: time.Second, MaxRetryDelay: 3 * time.Second},
			// Passes at 0, +1 s, +2 s, +3 s (capped), +0 after the success, +1 s.
			results: []error{failing, failing, failing, nil, failing, nil},
			want:    []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second, 6 * time.Second, 7 * time.Second},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(start)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var ran []time.Duration
			loop := tc.loop
			loop.Name, loop.Clock = "test", clock
			loop.Pass = func(context.Context) error {
				ran = append(ran, clock.Since(start))
				err := tc.results[len(ran)-1]
				if len(ran) == len(tc.results) {
					cancel()
				}
				return err
			}
			done := make(chan error)
			go func() { done <- loop.Start(ctx) }()
			for {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(ran, tc.want) {
						t.Errorf("passes at %v, want %v", ran, tc.want)
					}
					return
				default:
				}
				// Time moves only while the loop waits on the clock, in its smallest step.
				if clock.HasWaiters() {
					clock.Step(time.Second)
				} else {
					runtime.Gosched()
				}
			}
		})
	}
}
