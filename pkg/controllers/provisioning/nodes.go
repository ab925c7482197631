package provisioning

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/launcher"
)

// The Nodes of launched instances the cloud could not read back at launch, once it can
// (readUnread). Those a stopped controller left without one, the NodeClaim lifecycle creates.

// readUnread reads again the instances launched that the cloud could not read back: one read
// gets its Node, and its pods are planned onto it once the snapshot shows it; one gone releases
// its reservation, and its pods are planned again. It reports whether some are still unread.
func (c *Controller) readUnread(ctx context.Context, shown sets.Set[string]) (unread bool) {
	for _, n := range c.inFlight.toRead(shown) {
		u := n.unread
		instance, err := c.instanceProvider.Get(ctx, u.instance.ProviderID)
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
		registering, cancel := context.WithTimeout(context.WithoutCancel(ctx), launcher.NodeCreateTimeout)
		node, err := c.register(registering, u.launch, u.index, instance, false)
		cancel()
		if err != nil {
			log.FromContext(ctx).WithName(Name).Error(err, "creating the Node of an instance read again")
		} else if err := c.awaitCached(ctx, []*corev1.Node{node}, map[string]int{node.Name: u.launch.reservations[u.index]}, false); err != nil {
			log.FromContext(ctx).WithName(Name).Error(err, "waiting for the Node of an instance read again in the cache")
		}
		// Its pods are planned onto it once the snapshot shows it.
		unread = true
	}
	return unread
}
