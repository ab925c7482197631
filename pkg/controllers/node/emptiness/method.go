package emptiness

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/state"
)

// Method deletes the nodes the controller marked empty once their Provisioner's
// ttlSecondsAfterEmpty has passed: the first Provisioner method of the disruption controller's
// pass, run at every pass. Provisioners' TTLs have no disruption budget.
type Method struct {
	client   client.Client
	reader   client.Reader
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

// NewMethod builds the method.
func NewMethod(options Options) (*Method, error) {
	if options.Client == nil || options.Reader == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s method needs a client, a reader, a recorder and a clock", Name)
	}
	return &Method{client: options.Client, reader: options.Reader, recorder: options.Recorder, clock: options.Clock}, nil
}

// Name identifies the method.
func (m *Method) Name() string { return Name }

// Period is zero: the method runs at every pass, so a node goes within a pass of its TTL.
func (m *Method) Period() time.Duration { return 0 }

// Act deletes the marked nodes past their TTL that are still empty; the pass's snapshot is not
// needed, the mark says which nodes to look at. acted is whether it deleted one.
func (m *Method) Act(ctx context.Context, _ func() (*state.Snapshot, error)) (acted bool, err error) {
	var list corev1.NodeList
	if err := m.client.List(ctx, &list, client.HasLabels{v1alpha5.ProvisionerNameLabelKey}); err != nil {
		return false, fmt.Errorf("listing provisioners' nodes, %w", err)
	}
	now := m.clock.Now()
	for i := range list.Items {
		node := &list.Items[i]
		if _, marked := node.Annotations[v1alpha5.EmptinessTimestampAnnotationKey]; !marked {
			continue
		}
		deleted, err := m.deleteIfEmpty(ctx, node, now)
		if err != nil {
			return acted, err
		}
		acted = acted || deleted
	}
	return acted, nil
}

// deleteIfEmpty deletes the node when Decide says so, after asking the API server, whose view a
// pod bound or nominated a moment ago is in, whether it is still empty.
func (m *Method) deleteIfEmpty(ctx context.Context, node *corev1.Node, now time.Time) (bool, error) {
	ttl, err := ttlOf(ctx, m.client, node)
	if err != nil {
		return false, err
	}
	cached, err := onNode(ctx, m.client, node)
	if err != nil {
		return false, err
	}
	if Decide(node, ttl, cached, now) != Delete {
		return false, nil
	}
	live, err := onNode(ctx, m.reader, node)
	if err != nil {
		return false, err
	}
	if !IsEmpty(live) {
		// The cache is behind; the pod's watch event has the controller clear the mark.
		return false, nil
	}
	if err := m.client.Delete(ctx, node, client.Preconditions{UID: &node.UID, ResourceVersion: &node.ResourceVersion}); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("deleting empty node %s, %w", node.Name, err))
	}
	metrics.NodeClaimDisrupted(node, metrics.ReasonEmpty)
	log.FromContext(ctx).Info("deleted an empty node", "node", node.Name, "ttl", ttl)
	m.recorder.Eventf(node, corev1.EventTypeNormal, ReasonEmptyDeleted, "Node ran no pods for ttlSecondsAfterEmpty (%s); deleted it, its instance is terminated", *ttl)
	return true, nil
}
