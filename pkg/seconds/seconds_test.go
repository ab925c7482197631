package seconds_test

import (
	"math"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/seconds"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		seconds int64
		want    time.Duration
	}{
		{0, 0},
		{30, 30 * time.Second},
		{-30, -30 * time.Second},
		{seconds.Max, time.Duration(9223372036) * time.Second},
		{seconds.Max + 1, math.MaxInt64},
		{10_000_000_000, math.MaxInt64}, // finding 4 of issue 34: was about −267 years
		{math.MaxInt64, math.MaxInt64},
		{-seconds.Max, -time.Duration(9223372036) * time.Second},
		{-seconds.Max - 1, math.MinInt64},
		{math.MinInt64, math.MinInt64},
	} {
		if got := seconds.Duration(tc.seconds); got != tc.want {
			t.Errorf("Duration(%d) = %s, want %s", tc.seconds, got, tc.want)
		}
	}
	if seconds.Max != 9223372036 {
		t.Errorf("Max = %d, want 9223372036, the bound the CRDs state", seconds.Max)
	}
}
