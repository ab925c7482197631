package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/nodeclaims"
)

// DecisionAnnotationKey is on a NodeClaim launched for a decision that may be made again (a
// replacement): a digest of the decision, by which the same decision, made again after a
// crash, finds the NodeClaim launched for it instead of launching another.
const DecisionAnnotationKey = "karpenter.sh/decision"

// decisionDigest is the annotation value of a decision.
func decisionDigest(decision string) string {
	sum := sha256.Sum256([]byte(decision))
	return hex.EncodeToString(sum[:16])
}

// LaunchNode launches the one node of a request and creates its Node, for a decision that may be
// made again (a replacement). A NodeClaim already launched for the same decision is that decision's
// launch, made before a crash, and its Node is returned (created if need be) instead of another
// launch: unless counted, the nodes the caller's snapshot counted by name, has that Node: then
// other pods took the room it was launched for, and the decision needs another. An empty
// decision always launches anew. A NodeClaim that got no instance is deleted, and one whose Node
// cannot be created is deleted with its instance.
func (l *Launcher) LaunchNode(ctx context.Context, request Request, decision string, counted map[string]corev1.ResourceList) (*corev1.Node, error) {
	if decision != "" {
		request.Annotations = withAnnotation(request.Annotations, DecisionAnnotationKey, decisionDigest(decision))
		node, err := l.launchedFor(ctx, request.Annotations[DecisionAnnotationKey], counted)
		if node != nil || err != nil {
			return node, err
		}
	}
	nodeClaims, done, err := l.CreateNodeClaims(ctx, request)
	defer done()
	if err != nil {
		return nil, err
	}
	instances, err := l.Launch(ctx, request, nodeClaims)
	if err != nil {
		return nil, errors.Join(err, l.Fail(context.WithoutCancel(ctx), nodeClaims[0], err))
	}
	pairs, _ := Assign(nodeClaims, instances)
	instance, ok := pairs[nodeClaims[0]]
	if !ok {
		err := errors.New("the cloud launched no instance")
		return nil, errors.Join(err, l.Fail(context.WithoutCancel(ctx), nodeClaims[0], err))
	}
	nc, err := l.Record(ctx, nodeClaims[0], instance, InstanceTypeNamed(request.Candidates, instance.InstanceType))
	if err != nil {
		return nil, err
	}
	return l.createNodeOf(ctx, nc, instance)
}

// launchedFor is the Node of the NodeClaim launched for the decision, created if need be; nil
// when there is none, or when the caller counts it already.
func (l *Launcher) launchedFor(ctx context.Context, digest string, counted map[string]corev1.ResourceList) (*corev1.Node, error) {
	var list v1.NodeClaimList
	if err := l.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.Annotations[DecisionAnnotationKey] != digest || nc.DeletionTimestamp != nil || nc.Status.ProviderID == "" {
			continue
		}
		node, err := nodeclaims.NodeFor(ctx, l.client, nc)
		if err != nil {
			return nil, err
		}
		if node != nil {
			if _, taken := counted[node.Name]; taken {
				continue
			}
			return node, nil
		}
		instance, err := l.instances.Get(ctx, nc.Status.ProviderID)
		if notFound := (*cloudprovider.NotFoundError)(nil); errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading instance %s of nodeclaim %s, %w", nc.Status.ProviderID, nc.Name, err)
		}
		if _, taken := counted[instance.NodeName]; taken {
			continue
		}
		return l.createNodeOf(ctx, nc, instance)
	}
	return nil, nil
}

// createNodeOf creates the Node of a NodeClaim's instance; when it cannot, the NodeClaim is
// deleted, which terminates the instance.
func (l *Launcher) createNodeOf(ctx context.Context, nc *v1.NodeClaim, instance *cloudprovider.Instance) (*corev1.Node, error) {
	node := NodeOf(nc, instance)
	if err := CreateNode(ctx, l.client, l.instances, node); err != nil {
		if deleteErr := l.client.Delete(ctx, nc); client.IgnoreNotFound(deleteErr) != nil {
			err = errors.Join(err, fmt.Errorf("deleting nodeclaim %s, %w", nc.Name, deleteErr))
		}
		return nil, fmt.Errorf("creating node %s, %w", node.Name, err)
	}
	killpoint.Reached(killpoint.NodeCreated)
	return node, nil
}

func withAnnotation(annotations map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(annotations)+1)
	for k, v := range annotations {
		out[k] = v
	}
	out[key] = value
	return out
}
