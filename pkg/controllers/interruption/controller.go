// Package interruption acts on the cloud's notices about the instances of Karpenter's nodes,
// read from an interruption queue (on AWS, EventBridge events delivered to SQS): a node whose
// instance is about to be reclaimed, retired or stopped is deleted, so that the termination
// finalizer drains it while the instance still runs, and a spot offering that was reclaimed
// is not launched again for a while.
package interruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/periodic"
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
	// ActionEvent only records an Event on the node.
	ActionEvent Action = "Event"
	// ActionIgnore does nothing: no node Karpenter launched runs on the instance.
	ActionIgnore Action = "Ignore"
	// ActionDiscard drops a message that could not be read or is about something else.
	ActionDiscard Action = "Discard"
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
	}
	return ActionDeleteNode
}

// UnavailableOffering is the offering to stop launching after a message of kind about node,
// false when there is none: only a spot interruption says that the cloud is short of the
// capacity. A scheduled change or a stop is about one machine, and a user may stop or
// terminate an instance for any reason.
func UnavailableOffering(kind cloudprovider.InterruptionKind, node *corev1.Node) (cloudprovider.OfferingKey, bool) {
	if kind != cloudprovider.InterruptionSpot {
		return cloudprovider.OfferingKey{}, false
	}
	key := cloudprovider.OfferingKey{
		InstanceType: node.Labels[corev1.LabelInstanceTypeStable],
		Zone:         node.Labels[corev1.LabelTopologyZone],
		CapacityType: node.Labels[v1alpha5.CapacityTypeLabelKey],
	}
	return key, key.InstanceType != "" && key.Zone != "" && key.CapacityType != ""
}

// Options configure the controller.
type Options struct {
	Client    client.Client
	Queue     cloudprovider.InterruptionQueue
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	Clock     clock.Clock
}

// Controller reads the interruption queue and acts on its messages.
type Controller struct {
	client    client.Client
	queue     cloudprovider.InterruptionQueue
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.Clock
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Queue == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, an interruption queue, an instance provider, a recorder and a clock", Name)
	}
	return &Controller{client: options.Client, queue: options.Queue, instances: options.Instances, recorder: options.Recorder, clock: options.Clock}, nil
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
// again, and acting again is harmless (a node being deleted is not deleted twice).
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
	var errs []error
	for _, message := range messages {
		receivedTotal.WithLabelValues(string(message.Kind)).Inc()
		if err := c.handle(ctx, message, byInstance); err != nil {
			errs = append(errs, fmt.Errorf("message %s, %w", message.ID, err))
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

func (c *Controller) handle(ctx context.Context, message cloudprovider.InterruptionMessage, byInstance map[string]*corev1.Node) error {
	logger := log.FromContext(ctx).WithValues("message", message.ID, "kind", message.Kind)
	if message.Kind == cloudprovider.InterruptionUnknown {
		actionsTotal.WithLabelValues(string(message.Kind), string(ActionDiscard)).Inc()
		logger.Info("discarding a message that is not an interruption notice", "reason", message.Err)
		return nil
	}
	var errs []error
	for _, id := range message.InstanceIDs {
		node := byInstance[id]
		action := Decide(message.Kind, node)
		var err error
		switch action {
		case ActionIgnore:
			logger.V(1).Info("no node Karpenter launched runs on the instance", "instance", id)
		case ActionEvent:
			c.recorder.Eventf(node, corev1.EventTypeNormal, string(message.Kind), "%s for instance %s at %s; no action taken",
				describe(message), id, message.Time.UTC().Format(time.RFC3339))
		case ActionDeleteNode:
			err = c.deleteNode(ctx, message, id, node)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		actionsTotal.WithLabelValues(string(message.Kind), string(action)).Inc()
	}
	return errors.Join(errs...)
}

// deleteNode marks a reclaimed offering unavailable and deletes the node; a node already
// being deleted is left to its finalizer.
func (c *Controller) deleteNode(ctx context.Context, message cloudprovider.InterruptionMessage, id string, node *corev1.Node) error {
	if offering, ok := UnavailableOffering(message.Kind, node); ok {
		c.instances.MarkUnavailable(ctx, offering, fmt.Sprintf("%s of %s", describe(message), id))
	}
	if node.DeletionTimestamp != nil {
		return nil
	}
	if err := c.client.Delete(ctx, node, client.Preconditions{UID: &node.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting node %s of interrupted instance %s, %w", node.Name, id, err)
	}
	log.FromContext(ctx).Info("deleted the node of an interrupted instance", "message", message.ID, "kind", message.Kind, "node", node.Name, "instance", id)
	c.recorder.Eventf(node, corev1.EventTypeWarning, string(message.Kind), "%s for instance %s at %s; deleted the node to drain it",
		describe(message), id, message.Time.UTC().Format(time.RFC3339))
	return nil
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
