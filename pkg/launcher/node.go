package launcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// NodeCreateTimeout bounds the creation of a launched instance's Node, which goes on when the
// controller stops: an instance that exists gets its Node (or is terminated) then, rather than
// waiting for the next leader.
const NodeCreateTimeout = 30 * time.Second

// staleNodeRecheck is how often CreateNode looks again at a Node of the same name that stands
// for another instance, while it goes.
const staleNodeRecheck = 250 * time.Millisecond

// CreateNode creates the Node of a launched instance, trying for at most NodeCreateTimeout.
// A Node of its name that stands for the same instance (spec.providerID) is the one an earlier
// attempt created, and is kept. One that stands for another instance is stale: EC2 gives a
// terminated instance's private address, so its node name, to a later instance, and the old
// Node may still be there. When that Node's instance is gone, the Node is deleted (termination
// releases a Node whose instance is gone at once) and this one created once it went; while its
// instance lives, the name is not this instance's to take, and CreateNode fails. node is
// updated to the Node stored. Every launcher creates its Nodes so.
func CreateNode(ctx context.Context, c client.Client, instances cloudprovider.InstanceProvider, node *corev1.Node) error {
	ctx, cancel := context.WithTimeout(ctx, NodeCreateTimeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, staleNodeRecheck, true, func(ctx context.Context) (bool, error) {
		created := node.DeepCopy()
		err := c.Create(ctx, created)
		if err == nil {
			created.DeepCopyInto(node)
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		existing := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), existing); err != nil {
			// Not in the cache yet, or gone since: create again.
			return false, client.IgnoreNotFound(err)
		}
		if existing.Spec.ProviderID == node.Spec.ProviderID {
			existing.DeepCopyInto(node)
			return true, nil
		}
		last = fmt.Errorf("node %s stands for instance %q, not %s", node.Name, existing.Spec.ProviderID, node.Spec.ProviderID)
		if existing.DeletionTimestamp != nil {
			return false, nil
		}
		_, err = instances.Get(ctx, existing.Spec.ProviderID)
		if notFound := (*cloudprovider.NotFoundError)(nil); !errors.As(err, &notFound) {
			if err != nil {
				return false, fmt.Errorf("%w; reading its instance, %w", last, err)
			}
			return false, fmt.Errorf("%w, which runs", last)
		}
		log.FromContext(ctx).Info("deleting a stale node whose name a new instance registers as", "node", node.Name,
			"staleProviderID", existing.Spec.ProviderID, "providerID", node.Spec.ProviderID)
		if err := c.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("%w; deleting it, %w", last, err)
		}
		return false, nil
	})
	if err != nil && last != nil && ctx.Err() != nil {
		return fmt.Errorf("%w; it was not gone in time, %w", last, err)
	}
	return err
}
