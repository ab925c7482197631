package provisioning

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// The launched instances the cloud could not read back at launch, once it can (readUnread).

// readUnread reads again the instances launched that the cloud could not read back: one read
// is recorded on its NodeClaim, and its pods are planned onto it once the snapshot shows it; one gone releases
// its reservation, and its pods are planned again. It reports whether some are still unread.
func (c *Controller) readUnread(ctx context.Context, shown sets.Set[string]) (unread bool) {
	for _, n := range c.inFlight.toRead(shown) {
		u := n.unread
		instance, err := cloudprovider.GetRunning(ctx, c.instanceProvider, u.instance.ProviderID)
		if notFound := (*cloudprovider.NotFoundError)(nil); errors.As(err, &notFound) {
			c.ledger.Release(u.launch.reservations[u.index])
			c.inFlight.failed(n)
			continue
		}
		if err == nil && instance.NodeName == "" {
			err = errors.New("its node name is not known yet")
		}
		if err != nil {
			log.FromContext(ctx).WithName(Name).Error(err, "reading an instance launched for pods that wait for it", "instance", u.instance.ProviderID)
			unread = true
			continue
		}
		instance.Labels = u.instance.Labels
		if err := c.record(ctx, u.launch, u.index, instance); err != nil {
			log.FromContext(ctx).WithName(Name).Error(err, "recording an instance read again")
		}
		// Its pods are planned onto it once the snapshot shows the Node its kubelet registers.
		unread = true
	}
	return unread
}
