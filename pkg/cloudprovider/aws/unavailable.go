package aws

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
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

// markUnavailable stops offering key for the unavailable offerings TTL.
func (i *Instances) markUnavailable(key cloudprovider.OfferingKey, reason string) {
	unavailableOfferingsTotal.WithLabelValues(reason, key.InstanceType, key.Zone, key.CapacityType).Inc()
	i.unavailable.Add(key, reason, i.opts.UnavailableOfferingsTTL)
}

// MarkUnavailable stops offering key for the unavailable-offerings TTL, as after a capacity
// error: interruption handling calls it when EC2 reclaims a spot instance. Marking again
// restarts the TTL.
func (i *Instances) MarkUnavailable(_ context.Context, key cloudprovider.OfferingKey, reason string) {
	i.markUnavailable(key, reason)
}

// isUnavailable reports whether EC2 refused key for lack of capacity within the TTL.
func (i *Instances) isUnavailable(key cloudprovider.OfferingKey) bool {
	_, ok := i.unavailableReason(key)
	return ok
}

// unavailableReason is EC2's reason for refusing key within the TTL.
func (i *Instances) unavailableReason(key cloudprovider.OfferingKey) (string, bool) {
	reason, ok := i.unavailable.Get(key)
	if !ok {
		return "", false
	}
	return reason.(string), true
}
