package disruption

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// relistAfter is how soon after a listing the cloud is listed again for an instance it did not
// show (one launched since).
const relistAfter = 30 * time.Second

// instanceNetworks knows which network each of the cluster's instances runs in, for subnet and
// security group drift. It lists the cluster's instances at most once per driftRecheck (one
// paginated DescribeInstances on AWS, whatever the number of NodeClaims), and sooner for an
// instance the last listing did not show, at most once per relistAfter.
type instanceNetworks struct {
	instances cloudprovider.InstanceProvider
	clock     clock.Clock

	mu     sync.Mutex
	byID   map[string]*cloudprovider.Instance
	readAt time.Time
}

// of is the instance of the provider id, nil when unknown: no instance provider, the cloud could
// not be listed (logged; nothing drifts by its network meanwhile), or it does not show it.
func (n *instanceNetworks) of(ctx context.Context, providerID string) *cloudprovider.Instance {
	if n.instances == nil || providerID == "" {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.clock.Now()
	instance, known := n.byID[providerID]
	age := now.Sub(n.readAt)
	if (known && age < driftRecheck) || (!known && age < relistAfter) {
		return instance
	}
	listed, err := n.instances.List(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing the cluster's instances for their subnets and security groups; no node drifts by them until a listing succeeds")
		return instance
	}
	n.byID, n.readAt = make(map[string]*cloudprovider.Instance, len(listed)), now
	for _, i := range listed {
		n.byID[i.ProviderID] = i
	}
	return n.byID[providerID]
}
