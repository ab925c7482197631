// Package seconds converts the whole seconds of API fields (a Provisioner's TTLs and
// terminationGracePeriodSeconds, a pod's terminationGracePeriodSeconds) into durations without
// overflow. Every reader of such a field converts it here.
package seconds

import (
	"math"
	"time"
)

// Max is the most whole seconds a time.Duration holds: 9223372036, about 292 years. The CRDs
// refuse more in the fields Karpenter owns.
const Max = int64(math.MaxInt64 / int64(time.Second))

// Duration is n seconds. n × time.Second wraps around past Max (10000000000 seconds would be
// about −267 years, a deadline long past), so Duration saturates instead: more than Max is the
// longest duration, less than −Max the shortest.
func Duration(n int64) time.Duration {
	switch {
	case n > Max:
		return time.Duration(math.MaxInt64)
	case n < -Max:
		return time.Duration(math.MinInt64)
	}
	return time.Duration(n) * time.Second
}
