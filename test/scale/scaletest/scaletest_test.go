package scaletest

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(values ...int) []time.Duration {
		var out []time.Duration
		for _, v := range values {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		values []time.Duration
		p      int
		want   string
	}{
		{name: "none", p: 50, want: "n/a"},
		{name: "one", values: ms(120), p: 99, want: "120ms"},
		{name: "median of four is the second", values: ms(40, 10, 30, 20), p: 50, want: "20ms"},
		{name: "p99 of a hundred is the 99th", values: func() []time.Duration {
			var v []time.Duration
			for i := 1; i <= 100; i++ {
				v = append(v, time.Duration(i)*10*time.Millisecond)
			}
			return v
		}(), p: 99, want: "990ms"},
		{name: "p100 is the largest", values: ms(5, 1000), p: 100, want: "1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatPercentile(tc.values, tc.p); got != tc.want {
				t.Errorf("FormatPercentile(%v, %d) = %s, want %s", tc.values, tc.p, got, tc.want)
			}
		})
	}
}
