package provisioning

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/state"
)

// A batch's nodes register with the launching taint (a startup taint of their NodeClaims, which
// registration puts on the Node) and are released together once the last of them is registered,
// its pods nominated to their nodes just before (nominate.go). So when
// kube-scheduler sees the first node it can bind a pod to, every pod of the batch already
// counts on its planned node: small pods spread over the least allocated nodes do not take
// the room planned for a large one; and every zone and host the plan spread pods over is
// already seen (kube-scheduler counts every node a pod's topology spread or affinity may
// use as a domain, tainted or not), so the first node Ready does not take a whole spread
// group. Without the hold, pods bound to the first nodes left those planned elsewhere
// without room, and a second batch launched more nodes. A batch of one node is held too: other
// pending pods, of the next batch or of no Provisioner, would take its room the moment it turned
// Ready before its own were nominated, and a pod nominated to a node that exists is not planned
// again until kube-scheduler tries it and clears the nomination (minutes, when nothing else
// changes in the cluster).
var launchingTaint = corev1.Taint{Key: v1alpha5.LaunchingTaintKey, Effect: corev1.TaintEffectNoSchedule}

// dependsOnDomains is true for a pod with a topology spread or pod (anti-)affinity.
func dependsOnDomains(pod *corev1.Pod) bool {
	affinity := pod.Spec.Affinity
	return len(pod.Spec.TopologySpreadConstraints) > 0 || (affinity != nil && (affinity.PodAffinity != nil || affinity.PodAntiAffinity != nil))
}

func isLaunchingTaint(t corev1.Taint) bool { return t.Key == v1alpha5.LaunchingTaintKey }

// release removes the launching taint from the nodes, at most launchLimit at once. Each is
// given as created or last read; a patch that finds the taints changed reads the node again.
func (c *Controller) release(ctx context.Context, held []*corev1.Node) error {
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	for _, node := range held {
		group.Go(func() error {
			current := node
			err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !apierrors.IsNotFound(err) }, func() error {
				patch, err := nodes.RemoveTaintPatch(current, v1alpha5.LaunchingTaintKey)
				if err != nil || patch == nil {
					return err
				}
				if err := c.client.Patch(ctx, current.DeepCopy(), client.RawPatch(types.JSONPatchType, patch)); err != nil {
					fresh := &corev1.Node{}
					if getErr := c.client.Get(ctx, client.ObjectKeyFromObject(current), fresh); getErr == nil {
						current = fresh
					}
					return err
				}
				return nil
			})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing the %s taint of node %s, %w", v1alpha5.LaunchingTaintKey, node.Name, err)
			}
			return nil
		})
	}
	return group.Wait()
}

// heldNodes are the snapshot's nodes still carrying the launching taint: those of batches in
// flight, and those left by a controller that stopped mid-batch or a release that failed.
func heldNodes(c *state.Snapshot) []*corev1.Node {
	var out []*corev1.Node
	for i := range c.Nodes {
		if node := &c.Nodes[i]; node.DeletionTimestamp == nil && slices.ContainsFunc(node.Spec.Taints, isLaunchingTaint) {
			out = append(out, node)
		}
	}
	return out
}
