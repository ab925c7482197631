package horizontalautoscaler

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

type countingCache struct{ invalidations int }

func (c *countingCache) Invalidate() { c.invalidations++ }

func TestDiscoveryRefreshIsRateLimited(t *testing.T) {
	const interval = 30 * time.Second
	for _, tc := range []struct {
		name string
		// after are the delays from the start at which a refresh is asked for.
		after []time.Duration
		want  []bool
	}{
		{name: "the first refresh happens", after: []time.Duration{0}, want: []bool{true}},
		{name: "retries within the interval do not refresh again",
			after: []time.Duration{0, time.Second, 2 * time.Second, interval - time.Nanosecond},
			want:  []bool{true, false, false, false}},
		{name: "a refresh is allowed once the interval has passed",
			after: []time.Duration{0, interval, interval + time.Second, 2 * interval},
			want:  []bool{true, true, false, true}},
		{name: "long apart, every one refreshes",
			after: []time.Duration{0, time.Hour, 2 * time.Hour},
			want:  []bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := clocktesting.NewFakePassiveClock(start)
			cache := &countingCache{}
			r := &discoveryRefresher{cache: cache, clock: clk, interval: interval}
			wantInvalidations := 0
			for i, after := range tc.after {
				clk.SetTime(start.Add(after))
				if got := r.refresh(); got != tc.want[i] {
					t.Errorf("refresh at +%s = %v, want %v", after, got, tc.want[i])
				}
				if tc.want[i] {
					wantInvalidations++
				}
			}
			if cache.invalidations != wantInvalidations {
				t.Errorf("the cache was invalidated %d times, want %d", cache.invalidations, wantInvalidations)
			}
		})
	}
}
