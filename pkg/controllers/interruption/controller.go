// Package interruption acts on the cloud's notices about the instances of Karpenter's nodes,
// read from an interruption queue (on AWS, EventBridge events delivered to SQS): a node whose
// instance is about to be reclaimed, retired or stopped is deleted, so that the termination
// finalizer drains it while the instance still runs, and a spot offering that was reclaimed
// is not launched again for a while.
package interruption

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/node/garbagecollection"
	"karpenter.sh/karpenter/pkg/controllers/periodic"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
)

// Name identifies the controller.
const Name = "interruption"

// Action is what the controller does about one instance a message names; the values are
// the metric's action label, documented in docs/node-lifecycle.md.
type Action string

const (
	// ActionDeleteNode deletes the instance's node: the termination finalizer drains it.
	ActionDeleteNode Action = "DeleteNode"
	// ActionReplaceNode records the interruption on the node's NodeClaim: the disruption
	// controller launches its replacement first and deletes it once the replacement is
	// initialized, or one drain before the interruption (pkg/disruption, interruption.go). Taken
	// for a scheduled change of a NodePool's node that starts far enough ahead.
	ActionReplaceNode Action = "ReplaceNode"
	// ActionDeleteNodeClaim deletes the NodeClaim that recorded the instance when no node of it
	// has registered: its termination terminates the instance, and the pods it was launched for
	// get another node.
	ActionDeleteNodeClaim Action = "DeleteNodeClaim"
	// ActionEvent only records an Event on the node.
	ActionEvent Action = "Event"
	// ActionIgnore does nothing: no node Karpenter launched runs on the instance.
	ActionIgnore Action = "Ignore"
	// ActionWait keeps the message queued: the instance was launched for this cluster within
	// the grace period and its Node is not created yet, or its Node lacks the termination
	// finalizer (which the termination controller puts back at once) and would go without a
	// drain, so the message comes back, after the queue's visibility timeout, to act then.
	ActionWait Action = "Wait"
	// ActionDiscard drops a message that could not be read or is about something else.
	ActionDiscard Action = "Discard"
	// ActionRefuse drops a message that reads as an interruption but did not come from the
	// account the queue belongs to (on AWS, another account's EventBridge rule sent it, or it
	// names no account): acting on it would let that account drain the cluster's nodes.
	ActionRefuse Action = "Refuse"
)

// Retry delays after the queue fails, doubling from the first to the last.
const (
	minRetryDelay = time.Second
	maxRetryDelay = time.Minute
)

var (
	receivedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "received_messages_total",
		Help: "Messages received from the interruption queue, by kind.",
	}, []string{"kind"})
	deletedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "deleted_messages_total",
		Help: "Messages deleted from the interruption queue once handled, by kind.",
	}, []string{"kind"})
	actionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "actions_total",
		Help: "Actions taken for the instances interruption messages name, by message kind and action.",
	}, []string{"kind", "action"})
)

func init() {
	crmetrics.Registry.MustRegister(receivedTotal, deletedTotal, actionsTotal)
}

// Decide is what to do about a message of kind for the node running the instance it names
// (nil when no node does).
func Decide(kind cloudprovider.InterruptionKind, node *corev1.Node) Action {
	switch {
	case kind == cloudprovider.InterruptionUnknown:
		return ActionDiscard
	case node == nil || !nodes.IsLaunchedByKarpenter(node):
		return ActionIgnore
	case kind == cloudprovider.InterruptionRebalance:
		// A recommendation, not a notice: most never become interruptions, and replacing
		// every node that gets one would double the churn of a spot fleet.
		return ActionEvent
	case node.DeletionTimestamp == nil && !nodes.IsRemovable(node):
		return ActionWait
	}
	return ActionDeleteNode
}

// DecideUnregistered is what to do about a message of kind for an instance a NodeClaim recorded
// and no node of which has registered: as for a node, only the NodeClaim is there to delete.
// Upstream finds interrupted instances by their NodeClaims alike; here a message about an
// instance whose kubelet is slow to register was dropped once the grace period for its Node
// had passed, and the pods waited for a node that was going away.
func DecideUnregistered(kind cloudprovider.InterruptionKind) Action {
	switch kind {
	case cloudprovider.InterruptionUnknown:
		return ActionDiscard
	case cloudprovider.InterruptionSpot, cloudprovider.InterruptionScheduledChange, cloudprovider.InterruptionStateChange:
		return ActionDeleteNodeClaim
	}
	return ActionIgnore
}

// UnavailableOffering is the offering to stop launching after a message of kind about the
// node (or NodeClaim) with the labels, false when there is none: only a spot interruption says
// that the cloud is short of the capacity. A scheduled change or a stop is about one machine,
// and a user may stop or terminate an instance for any reason.
func UnavailableOffering(kind cloudprovider.InterruptionKind, labels map[string]string) (cloudprovider.OfferingKey, bool) {
	if kind != cloudprovider.InterruptionSpot {
		return cloudprovider.OfferingKey{}, false
	}
	key := cloudprovider.OfferingKey{
		InstanceType: labels[corev1.LabelInstanceTypeStable],
		Zone:         labels[corev1.LabelTopologyZone],
		CapacityType: labels[v1alpha5.CapacityTypeLabelKey],
	}
	return key, key.InstanceType != "" && key.Zone != "" && key.CapacityType != ""
}

// Options configure the controller.
type Options struct {
	Client client.Client
	// Reader reads from the API server, not the cache: a node created a moment ago may be
	// missing from the cache the client reads.
	Reader    client.Reader
	Queue     cloudprovider.InterruptionQueue
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	Clock     clock.Clock
	// Grace is how long after its launch an instance of this cluster may have no Node and
	// still get one (garbage collection's grace); garbagecollection.DefaultGrace when zero.
	Grace time.Duration
	// ReplaceFirst is whether the disruption controller runs, which replaces the node of a
	// NodeClaim a scheduled change is recorded on (replaceFirst); without it every interrupted
	// node is drained at once.
	ReplaceFirst bool
}

// Controller reads the interruption queue and acts on its messages.
type Controller struct {
	client    client.Client
	reader    client.Reader
	queue     cloudprovider.InterruptionQueue
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.Clock
	grace     time.Duration
	// replaceFirstEnabled is Options.ReplaceFirst.
	replaceFirstEnabled bool
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Reader == nil || options.Queue == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, an API reader, an interruption queue, an instance provider, a recorder and a clock", Name)
	}
	return &Controller{client: options.Client, reader: options.Reader, queue: options.Queue, instances: options.Instances, recorder: options.Recorder,
		clock: options.Clock, grace: cmp.Or(options.Grace, garbagecollection.DefaultGrace), replaceFirstEnabled: options.ReplaceFirst}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager reads the queue on the leader only: two replicas reading it would act
// twice on each message. The queue long-polls, so an idle queue costs one call per wait; after
// a failed receive the next waits, longer each time.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return periodic.Add(mgr, &periodic.Loop{Name: Name, Clock: c.clock, Pass: c.receive, MinRetryDelay: minRetryDelay, MaxRetryDelay: maxRetryDelay})
}

// receive handles the messages of one receive. Messages not handled come back once their
// visibility timeout runs out, so a failure to handle them is only logged.
func (c *Controller) receive(ctx context.Context) error {
	messages, err := c.queue.Receive(ctx)
	if err != nil {
		return fmt.Errorf("receiving interruption messages, %w", err)
	}
	if len(messages) > 0 {
		if err := c.HandleBatch(ctx, messages); err != nil {
			log.FromContext(ctx).Error(err, "handling interruption messages; those not handled come back once their visibility timeout runs out")
		}
	}
	return nil
}

// HandleBatch acts on each message and deletes those acted on. A message is deleted only
// after its action is taken: a crash before that leaves it in the queue, which delivers it
// again, and acting again is harmless (a node being deleted is not deleted twice). A message
// about an instance the cluster launched moments ago whose Node does not exist yet is kept:
// it comes back to find the Node.
func (c *Controller) HandleBatch(ctx context.Context, messages []cloudprovider.InterruptionMessage) error {
	nodeList := &corev1.NodeList{}
	if err := c.client.List(ctx, nodeList); err != nil {
		return fmt.Errorf("listing nodes, %w", err)
	}
	byInstance := map[string]*corev1.Node{}
	for i := range nodeList.Items {
		node := &nodeList.Items[i]
		if id := instanceID(node.Spec.ProviderID); id != "" {
			byInstance[id] = node
		}
	}
	lookup := &nodeLookup{controller: c, cached: byInstance}
	var errs []error
	for _, message := range messages {
		receivedTotal.WithLabelValues(string(message.Kind)).Inc()
		keep, err := c.handle(ctx, message, lookup)
		if err != nil {
			errs = append(errs, fmt.Errorf("message %s, %w", message.ID, err))
			continue
		}
		if keep {
			continue
		}
		if err := c.queue.Delete(ctx, message); err != nil {
			errs = append(errs, fmt.Errorf("deleting message %s, %w", message.ID, err))
			continue
		}
		deletedTotal.WithLabelValues(string(message.Kind)).Inc()
	}
	return errors.Join(errs...)
}

// instanceID is the cloud's id of a node's instance, the last segment of its provider id
// (aws:///us-west-2a/i-0123456789abcdef0).
func instanceID(providerID string) string {
	if providerID == "" {
		return ""
	}
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// handle acts on a message for each instance it names; keep is true when the message must stay
// queued for an instance whose Node is still to come.
func (c *Controller) handle(ctx context.Context, message cloudprovider.InterruptionMessage, lookup *nodeLookup) (keep bool, err error) {
	logger := log.FromContext(ctx).WithValues("message", message.ID, "kind", message.Kind)
	if message.Kind == cloudprovider.InterruptionUnknown {
		actionsTotal.WithLabelValues(string(message.Kind), string(ActionDiscard)).Inc()
		logger.Info("discarding a message that is not an interruption notice", "reason", message.Err)
		return false, nil
	}
	if message.Refused != nil {
		actionsTotal.WithLabelValues(string(message.Kind), string(ActionRefuse)).Inc()
		// An error: the queue's policy lets someone other than the cluster's account send to it.
		logger.Error(message.Refused, "refusing an interruption message that did not come from the queue's account; restrict the queue's policy (docs/aws.md)",
			"instances", message.InstanceIDs)
		return false, nil
	}
	var errs []error
	for _, id := range message.InstanceIDs {
		node, instance, young, err := lookup.node(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		action := Decide(message.Kind, node)
		var nc *v1.NodeClaim
		if node == nil && instance != nil {
			if nc, err = c.nodeClaimRecording(ctx, instance.ProviderID); err != nil {
				errs = append(errs, err)
				continue
			}
			if nc != nil {
				action = DecideUnregistered(message.Kind)
			}
		}
		if action == ActionIgnore && young && nc == nil {
			action = ActionWait
		}
		switch action {
		case ActionWait:
			keep = true
			if node == nil {
				logger.Info("keeping the message until the Node of the instance, launched moments ago, exists", "instance", id)
			} else {
				logger.Info("keeping the message until the instance's Node has its termination finalizer back, so that its deletion drains it", "instance", id, "node", node.Name)
			}
		case ActionIgnore:
			logger.V(1).Info("no node Karpenter launched runs on the instance", "instance", id)
		case ActionEvent:
			c.recorder.Eventf(node, corev1.EventTypeNormal, string(message.Kind), "%s for instance %s at %s; no action taken",
				describe(message), id, message.Time.UTC().Format(time.RFC3339))
		case ActionDeleteNodeClaim:
			err = c.deleteNodeClaim(ctx, message, id, nc)
		case ActionDeleteNode:
			var replacing bool
			if replacing, err = c.replaceFirst(ctx, message, id, node); replacing {
				action = ActionReplaceNode
			} else if err == nil {
				err = c.deleteNode(ctx, message, id, node)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		actionsTotal.WithLabelValues(string(message.Kind), string(action)).Inc()
	}
	return keep, errors.Join(errs...)
}

// nodeLookup finds the node of an instance for one batch of messages: in the cache first; for
// an instance the cache shows no node on, the cloud says whether the cluster launched it, and
// the API server whether its Node exists already, asked once per batch and instance.
type nodeLookup struct {
	controller *Controller
	cached     map[string]*corev1.Node
	owned      map[string]*cloudprovider.Instance
}

// node returns the node running the instance, nil when there is none; then instance is the
// cluster's instance of the id (nil when the cluster did not launch it), and young is true when
// the cluster launched it within the grace period, so that its Node is still to come.
func (l *nodeLookup) node(ctx context.Context, id string) (node *corev1.Node, instance *cloudprovider.Instance, young bool, err error) {
	if node := l.cached[id]; node != nil {
		return node, nil, false, nil
	}
	if l.owned == nil {
		instances, err := l.controller.instances.List(ctx)
		if err != nil {
			return nil, nil, false, fmt.Errorf("listing the cluster's instances to find instance %s, %w", id, err)
		}
		l.owned = map[string]*cloudprovider.Instance{}
		for _, instance := range instances {
			l.owned[instance.ID] = instance
		}
	}
	instance = l.owned[id]
	if instance == nil {
		return nil, nil, false, nil
	}
	stored := &corev1.Node{}
	err = l.controller.reader.Get(ctx, client.ObjectKey{Name: instance.NodeName}, stored)
	switch {
	case err == nil && stored.Spec.ProviderID == instance.ProviderID:
		l.cached[id] = stored
		return stored, nil, false, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, nil, false, fmt.Errorf("reading node %s of instance %s, %w", instance.NodeName, id, err)
	}
	return nil, instance, l.controller.clock.Since(instance.LaunchTime) < l.controller.grace, nil
}

// nodeClaimRecording is the NodeClaim that recorded the instance, nil when none did.
func (c *Controller) nodeClaimRecording(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := c.client.List(ctx, &list, client.MatchingFields{nodeclaims.NodeClaimProviderIDField: providerID}); err != nil {
		return nil, fmt.Errorf("listing the nodeclaim of instance %s, %w", providerID, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// replaceFirst records a scheduled change on the node's NodeClaim when the change starts far
// enough ahead to launch a replacement first (disruption.Interruption.ReplaceFirst) and the node
// is a NodePool's, whose disruption controller replaces it; true when it did, or had already.
// Otherwise the node is drained at once, as a node of a Provisioner is (false).
func (c *Controller) replaceFirst(ctx context.Context, message cloudprovider.InterruptionMessage, id string, node *corev1.Node) (bool, error) {
	if !c.replaceFirstEnabled || message.Kind != cloudprovider.InterruptionScheduledChange || message.Deadline.IsZero() || node.DeletionTimestamp != nil {
		return false, nil
	}
	name, ok := nodeclaims.Owner(node)
	if !ok {
		return false, nil
	}
	nc := &v1.NodeClaim{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("reading nodeclaim %s of node %s, %w", name, node.Name, err))
	}
	if nc.Status.ProviderID != node.Spec.ProviderID || nc.DeletionTimestamp != nil || nc.Labels[v1.NodePoolLabelKey] == "" {
		return false, nil
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: nc.Labels[v1.NodePoolLabelKey]}, &v1.NodePool{}); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("reading the nodepool of nodeclaim %s, %w", nc.Name, err))
	}
	interruption := disruption.Interruption{Reason: disruptionReason(message), Deadline: message.Deadline}
	if recorded, ok, _ := disruption.InterruptionOf(nc); ok && recorded.Reason == interruption.Reason && recorded.Deadline.Equal(interruption.Deadline) {
		return true, nil
	}
	if !interruption.ReplaceFirst(nc, c.clock.Now()) {
		return false, nil
	}
	patch := client.MergeFrom(nc.DeepCopy())
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	maps.Copy(nc.Annotations, interruption.Annotations())
	if err := c.client.Patch(ctx, nc, patch); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("recording the scheduled change on nodeclaim %s, %w", nc.Name, err))
	}
	log.FromContext(ctx).Info("replacing the node of an instance a scheduled change takes away", "message", message.ID, "node", node.Name, "nodeclaim", nc.Name,
		"instance", id, "startTime", message.Deadline, "drainBy", interruption.DrainBy(nc))
	text := fmt.Sprintf("%s for instance %s at %s; replacing the node first, deleted by %s at the latest", describe(message), id,
		message.Deadline.UTC().Format(time.RFC3339), interruption.DrainBy(nc).UTC().Format(time.RFC3339))
	c.recorder.Event(node, corev1.EventTypeNormal, string(message.Kind), text)
	c.recorder.Event(nc, corev1.EventTypeNormal, string(message.Kind), text)
	return true, nil
}

// deleteNode marks a reclaimed offering unavailable and deletes the node; a node already
// being deleted is left to its finalizer. The node is read from the API server first and
// deleted at that version, so that a node deleted since the cache was read (for another message
// of the batch, or of a batch just before) is not deleted, nor counted, again.
func (c *Controller) deleteNode(ctx context.Context, message cloudprovider.InterruptionMessage, id string, node *corev1.Node) error {
	c.markReclaimed(ctx, message, id, node.Labels)
	if node.DeletionTimestamp != nil {
		return nil
	}
	live := &corev1.Node{}
	if err := c.reader.Get(ctx, client.ObjectKeyFromObject(node), live); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("reading node %s of interrupted instance %s, %w", node.Name, id, err))
	}
	if live.UID != node.UID || live.DeletionTimestamp != nil {
		return nil
	}
	if err := c.client.Delete(ctx, live, client.Preconditions{UID: &live.UID, ResourceVersion: &live.ResourceVersion}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting node %s of interrupted instance %s, %w", node.Name, id, err))
	}
	metrics.NodeClaimDisrupted(live, disruptionReason(message))
	log.FromContext(ctx).Info("deleted the node of an interrupted instance", "message", message.ID, "kind", message.Kind, "node", node.Name, "instance", id)
	c.recorder.Eventf(node, corev1.EventTypeWarning, string(message.Kind), "%s for instance %s at %s; deleted the node to drain it",
		describe(message), id, message.Time.UTC().Format(time.RFC3339))
	return nil
}

// markReclaimed stops offering, for a while, what a spot interruption of the node (or NodeClaim)
// with the labels reclaimed (UnavailableOffering).
func (c *Controller) markReclaimed(ctx context.Context, message cloudprovider.InterruptionMessage, id string, labels map[string]string) {
	if offering, ok := UnavailableOffering(message.Kind, labels); ok {
		c.instances.MarkUnavailable(ctx, offering, fmt.Sprintf("%s of %s", describe(message), id))
	}
}

// deleteNodeClaim marks a reclaimed offering unavailable and deletes the NodeClaim of an
// instance no node of which registered; one already being deleted is left to its finalizer.
func (c *Controller) deleteNodeClaim(ctx context.Context, message cloudprovider.InterruptionMessage, id string, nc *v1.NodeClaim) error {
	c.markReclaimed(ctx, message, id, nc.Labels)
	if nc.DeletionTimestamp != nil {
		return nil
	}
	if err := c.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID, ResourceVersion: &nc.ResourceVersion}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s of interrupted instance %s, %w", nc.Name, id, err))
	}
	metrics.NodeClaimDisrupted(nc, disruptionReason(message))
	log.FromContext(ctx).Info("deleted the nodeclaim of an interrupted instance whose node has not registered", "message", message.ID, "kind", message.Kind, "nodeclaim", nc.Name, "instance", id)
	c.recorder.Eventf(nc, corev1.EventTypeWarning, string(message.Kind), "%s for instance %s at %s; its node has not registered, deleted the nodeclaim",
		describe(message), id, message.Time.UTC().Format(time.RFC3339))
	return nil
}

// disruptionReason is the reason label of karpenter_nodeclaims_disrupted_total for a node
// deleted on the message: upstream's name of the message's kind.
func disruptionReason(message cloudprovider.InterruptionMessage) string {
	switch message.Kind {
	case cloudprovider.InterruptionSpot:
		return "spot_interrupted"
	case cloudprovider.InterruptionScheduledChange:
		return "scheduled_change"
	case cloudprovider.InterruptionStateChange:
		if message.State == "stopping" || message.State == "stopped" {
			return "instance_stopped"
		}
		return "instance_terminated"
	}
	return strings.ToLower(string(message.Kind))
}

// describe says what a message announces, in words fit for an Event.
func describe(message cloudprovider.InterruptionMessage) string {
	switch message.Kind {
	case cloudprovider.InterruptionSpot:
		return "Spot interruption warning"
	case cloudprovider.InterruptionRebalance:
		return "Rebalance recommendation"
	case cloudprovider.InterruptionScheduledChange:
		return "Scheduled maintenance"
	case cloudprovider.InterruptionStateChange:
		return fmt.Sprintf("Instance state %s", message.State)
	}
	return string(message.Kind)
}
