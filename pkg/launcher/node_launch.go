package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
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

// Launched is a node launched for a decision: its NodeClaim, its instance recorded, and the
// name its kubelet registers its Node as.
type Launched struct {
	NodeClaim *v1.NodeClaim
	NodeName  string
}

// LaunchedFor is the launch of a decision that may be made again (a replacement) made before,
// by this process or one before a crash: nil when there is none (or the decision is empty), a
// LaunchInProgressError while it is not done. A NodeClaim launched for the decision whose node
// counted, the nodes the caller's snapshot counted by name, holds is not the decision's any more:
// other pods took the room it was launched for, and the decision needs another. The caller asks
// before reserving room for a launch of its own (LaunchNode): a launch found holds its room
// already, counted by the snapshot or reserved by the launch that made it.
func (l *Launcher) LaunchedFor(ctx context.Context, decision string, counted map[string]corev1.ResourceList) (*Launched, error) {
	if decision == "" {
		return nil, nil
	}
	return l.launchedFor(ctx, decisionDigest(decision), counted)
}

// LaunchNode launches the one node of a request anew, for a decision that may be made again (a
// replacement; LaunchedFor finds it then); the instance's kubelet registers its Node. A
// NodeClaim that got no instance is deleted; one whose instance launched and could not be read
// back records it and is returned as a LaunchInProgressError, for the decision made again to
// find once the instance is read.
func (l *Launcher) LaunchNode(ctx context.Context, request Request, decision string) (*Launched, error) {
	if decision != "" {
		request.Annotations = maps.Clone(request.Annotations)
		if request.Annotations == nil {
			request.Annotations = map[string]string{}
		}
		request.Annotations[DecisionAnnotationKey] = decisionDigest(decision)
	}
	nodeClaims, done, err := l.CreateNodeClaims(ctx, request)
	defer done()
	if err != nil {
		return nil, err
	}
	if decision != "" {
		l.created.add(decisionDigest(decision), nodeClaims[0].Name)
	}
	// fail deletes the NodeClaim that got no instance; once it is deleted, the decision has no
	// launch to find.
	fail := func(err error) error {
		failErr := l.Fail(context.WithoutCancel(ctx), nodeClaims[0], err)
		if failErr == nil && decision != "" {
			l.created.forget(decisionDigest(decision), nodeClaims[0].Name)
		}
		return errors.Join(err, failErr)
	}
	instances, err := l.Launch(ctx, request, nodeClaims)
	unread := (*cloudprovider.UnreadInstancesError)(nil)
	if errors.As(err, &unread) {
		// They run: deleting the NodeClaim would leave its instance to garbage collection and
		// the decision to launch again.
		instances = append(instances, unread.Instances...)
	} else if err != nil {
		return nil, fail(err)
	}
	pairs, _ := Assign(nodeClaims, instances)
	instance, ok := pairs[nodeClaims[0]]
	if !ok {
		err := errors.New("the cloud launched no instance")
		return nil, fail(err)
	}
	if instance.State.ShutDown() {
		// It failed at boot (EC2 terminates an instance whose volumes it cannot encrypt, say):
		// nothing to record, nothing to wait for.
		err := fmt.Errorf("instance %s shut down as it launched", instance.ID)
		return nil, fail(err)
	}
	nc, err := l.Record(ctx, nodeClaims[0], instance, InstanceTypeNamed(request.Candidates, instance.InstanceType))
	if err != nil {
		return nil, err
	}
	if instance.NodeName == "" {
		why := errors.New("its node name is not known yet")
		if unread != nil {
			why = unread
		}
		return nil, &LaunchInProgressError{NodeClaim: nc.Name, Instance: instance.ProviderID, Err: why}
	}
	return &Launched{NodeClaim: nc, NodeName: instance.NodeName}, nil
}

// LaunchInProgressError is a decision's NodeClaim whose launch is not done: created and not yet
// recorded, its launch under way (or a crash interrupted it, and the NodeClaim lifecycle
// controller resumes it); or its instance recorded and not read yet (Instance, with why: the
// cloud's read failed, or the cloud does not show the instance yet). The decision waits for it
// rather than launching a second node.
type LaunchInProgressError struct {
	NodeClaim string
	// Instance is the recorded instance's provider id.
	Instance string
	Err      error
}

func (e *LaunchInProgressError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("nodeclaim %s of the same decision is still being launched; deciding again once its instance is recorded", e.NodeClaim)
	}
	return fmt.Sprintf("instance %s of nodeclaim %s, launched for the same decision, is not read yet (%v); deciding again once it is", e.Instance, e.NodeClaim, e.Err)
}

func (e *LaunchInProgressError) Unwrap() error { return e.Err }

// launchedFor is the launch of the NodeClaim launched for the decision; nil when there is none,
// when its instance shut down, or when the caller counts its node already. A
// LaunchInProgressError when that NodeClaim has no instance recorded yet, or the cloud does not
// show it or its node name yet: just launched, EC2 may not know it for a moment (its reads are
// eventually consistent), and one truly gone has its NodeClaim deleted by garbage collection.
// The NodeClaims are read from the cache; one this process created for the decision that the
// cache does not show yet is read from the API server (created).
func (l *Launcher) launchedFor(ctx context.Context, digest string, counted map[string]corev1.ResourceList) (*Launched, error) {
	var list v1.NodeClaimList
	if err := l.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var shown []*v1.NodeClaim
	for i := range list.Items {
		if nc := &list.Items[i]; nc.Annotations[DecisionAnnotationKey] != "" {
			shown = append(shown, nc)
		}
	}
	name, unshown := l.created.unshown(digest, shown)
	for _, nc := range shown {
		if nc.Annotations[DecisionAnnotationKey] != digest || nc.DeletionTimestamp != nil {
			continue
		}
		if launched, err := l.launchOf(ctx, nc, counted); launched != nil || err != nil {
			return launched, err
		}
	}
	if !unshown {
		return nil, nil
	}
	nc := &v1.NodeClaim{}
	err := l.reader.Get(ctx, client.ObjectKey{Name: name}, nc)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading nodeclaim %s, launched for the decision and not in the cache yet, %w", name, err)
	}
	if err != nil || nc.DeletionTimestamp != nil {
		l.created.forget(digest, name)
		return nil, nil
	}
	return l.launchOf(ctx, nc, counted)
}

// launchOf is the launch of a NodeClaim launched for a decision, as launchedFor tells it.
func (l *Launcher) launchOf(ctx context.Context, nc *v1.NodeClaim, counted map[string]corev1.ResourceList) (*Launched, error) {
	if nc.Status.ProviderID == "" {
		return nil, &LaunchInProgressError{NodeClaim: nc.Name}
	}
	node, err := nodeclaims.NodeFor(ctx, l.client, nc)
	if err != nil {
		return nil, err
	}
	if node != nil {
		if _, taken := counted[node.Name]; taken {
			return nil, nil
		}
		return &Launched{NodeClaim: nc, NodeName: node.Name}, nil
	}
	instance, err := l.instances.Get(ctx, nc.Status.ProviderID)
	if notFound := (*cloudprovider.NotFoundError)(nil); errors.As(err, &notFound) {
		return nil, &LaunchInProgressError{NodeClaim: nc.Name, Instance: nc.Status.ProviderID, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("reading instance %s of nodeclaim %s, %w", nc.Status.ProviderID, nc.Name, err)
	}
	if instance.State.ShutDown() {
		return nil, nil
	}
	if instance.NodeName == "" {
		return nil, &LaunchInProgressError{NodeClaim: nc.Name, Instance: nc.Status.ProviderID, Err: errors.New("its node name is not known yet")}
	}
	if _, taken := counted[instance.NodeName]; taken {
		return nil, nil
	}
	return &Launched{NodeClaim: nc, NodeName: instance.NodeName}, nil
}

// createdForDecisions names, by decision digest, the NodeClaim this process created for each
// decision until the cache shows it: a NodeClaim is not in the cache for a moment after its
// creation, and the decision made again in that moment (its launch in progress, say) must find
// it rather than launch another. A process started after a crash needs none: its cache starts
// from a full read.
type createdForDecisions struct {
	mu    sync.Mutex
	names map[string]string
}

// add records the NodeClaim created for the decision.
func (c *createdForDecisions) add(digest, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]string{}
	}
	c.names[digest] = name
}

// unshown forgets the NodeClaims the cache shows, and names the one created for the decision
// when it is not among them.
func (c *createdForDecisions) unshown(digest string, shown []*v1.NodeClaim) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nc := range shown {
		if d := nc.Annotations[DecisionAnnotationKey]; c.names[d] == nc.Name {
			delete(c.names, d)
		}
	}
	name, ok := c.names[digest]
	return name, ok
}

// forget drops the NodeClaim created for the decision, gone or going from the API server, or
// deleted by the launch that created it.
func (c *createdForDecisions) forget(digest, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names[digest] == name {
		delete(c.names, digest)
	}
}
