package horizontalautoscaler

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// discoveryRefreshInterval is the least time between two refreshes of the discovery cache. A
// refresh re-reads every API group from the API server; without a floor, each retry of every
// autoscaler whose target kind serves no /scale would do so.
const discoveryRefreshInterval = 30 * time.Second

// invalidator is the part of a cached discovery client a refresh needs.
type invalidator interface{ Invalidate() }

// discoveryRefresher invalidates a discovery cache at most once per interval, so that a scale
// subresource added since the cache was filled is found within the interval.
type discoveryRefresher struct {
	cache    invalidator
	clock    clock.PassiveClock
	interval time.Duration

	mu        sync.Mutex
	refreshed time.Time // zero until the first refresh
}

// refresh invalidates the cache unless it did within the interval, and reports whether it did.
func (r *discoveryRefresher) refresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if !r.refreshed.IsZero() && now.Sub(r.refreshed) < r.interval {
		return false
	}
	r.cache.Invalidate()
	r.refreshed = now
	return true
}
