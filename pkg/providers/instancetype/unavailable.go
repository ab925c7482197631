package instancetype

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// unavailableOfferingsTotal counts the offerings EC2 had no capacity for, by its reason.
var unavailableOfferingsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter", Subsystem: "cloudprovider", Name: "unavailable_offerings_total",
	Help: "Offerings (instance type, zone, capacity type) EC2 refused for lack of capacity (reason: its error code) or reclaimed as spot (reason: the interruption); each is not offered for --aws-unavailable-offerings-ttl.",
}, []string{"reason", "instance_type", "zone", "capacity_type"})

func init() {
	crmetrics.Registry.MustRegister(unavailableOfferingsTotal)
}

// UnavailableOfferings are the offerings the cloud recently had no capacity for: each is not
// offered for a TTL after it is marked.
type UnavailableOfferings struct {
	cache *cache.LRUExpireCache
	ttl   time.Duration
}

// unavailableOfferingsSize bounds the offerings kept.
const unavailableOfferingsSize = 10000

// NewUnavailableOfferings keeps offerings unavailable for ttl, timed by clk.
func NewUnavailableOfferings(clk clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	return &UnavailableOfferings{cache: cache.NewLRUExpireCacheWithClock(unavailableOfferingsSize, clk), ttl: ttl}
}

// Mark stops offering key for the TTL, for the reason (the cloud's error code, or the
// interruption); marking again restarts the TTL.
func (u *UnavailableOfferings) Mark(key cloudprovider.OfferingKey, reason string) {
	unavailableOfferingsTotal.WithLabelValues(reason, key.InstanceType, key.Zone, key.CapacityType).Inc()
	u.cache.Add(key, reason, u.ttl)
}

// IsUnavailable reports whether key was marked within the TTL.
func (u *UnavailableOfferings) IsUnavailable(key cloudprovider.OfferingKey) bool {
	_, ok := u.Reason(key)
	return ok
}

// Reason is why key was marked within the TTL.
func (u *UnavailableOfferings) Reason(key cloudprovider.OfferingKey) (string, bool) {
	reason, ok := u.cache.Get(key)
	if !ok {
		return "", false
	}
	return reason.(string), true
}
