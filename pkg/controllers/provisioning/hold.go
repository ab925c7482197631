package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

// A batch's nodes are created with the launching taint and released together once the last
// of them exists, when its pods' placement depends on which nodes exist (countsDomains).
// kube-scheduler counts every node a pod's topology spread or affinity may
// use as a domain, tainted or not, so a pod bound to the first Ready node of a batch is then
// placed knowing every zone and host the plan spread it over; without the hold, the first
// nodes take the whole spread group and the pods planned elsewhere wait for a second launch.
var launchingTaint = corev1.Taint{Key: v1alpha5.LaunchingTaintKey, Effect: corev1.TaintEffectNoSchedule}

// countsDomains is true when a pod of the new nodes has a topology spread or pod (anti-)
// affinity: where kube-scheduler puts it depends on which nodes exist when it binds it, so the
// batch is held until all do. Pods without either fit any node the plan gave room for, and
// each node is opened as soon as it is Ready.
func countsDomains(newNodes []*scheduling.NewNode) bool {
	return slices.ContainsFunc(newNodes, func(n *scheduling.NewNode) bool { return slices.ContainsFunc(n.Pods, dependsOnDomains) })
}

// dependsOnDomains is true for a pod with a topology spread or pod (anti-)affinity.
func dependsOnDomains(pod *corev1.Pod) bool {
	affinity := pod.Spec.Affinity
	return len(pod.Spec.TopologySpreadConstraints) > 0 || (affinity != nil && (affinity.PodAffinity != nil || affinity.PodAntiAffinity != nil))
}

func isLaunchingTaint(t corev1.Taint) bool { return t.Key == v1alpha5.LaunchingTaintKey }

// releasePatch is the JSON patch that removes the launching taint from the node as read, or
// nil when it has none. Its test operation makes it fail, rather than remove another taint,
// when the taints changed since (the readiness controller removing not-ready), so it is
// built again from a fresh read.
func releasePatch(node *corev1.Node) ([]byte, error) {
	i := slices.IndexFunc(node.Spec.Taints, isLaunchingTaint)
	if i < 0 {
		return nil, nil
	}
	path := fmt.Sprintf("/spec/taints/%d", i)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": node.Spec.Taints[i]},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return nil, fmt.Errorf("building the patch, %w", err)
	}
	return patch, nil
}

// release removes the launching taint from the nodes, at most launchLimit at once. Each is
// given as created or last read; a patch that finds the taints changed reads the node again.
func (c *Controller) release(ctx context.Context, held []*corev1.Node) error {
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	for _, node := range held {
		group.Go(func() error {
			current := node
			err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !apierrors.IsNotFound(err) }, func() error {
				patch, err := releasePatch(current)
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
func (c *Snapshot) heldNodes() []*corev1.Node {
	var out []*corev1.Node
	for i := range c.Nodes {
		if node := &c.Nodes[i]; node.DeletionTimestamp == nil && slices.ContainsFunc(node.Spec.Taints, isLaunchingTaint) {
			out = append(out, node)
		}
	}
	return out
}
