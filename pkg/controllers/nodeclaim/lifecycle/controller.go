// Package lifecycle takes a NodeClaim from its launch to an initialized node: it matches the
// node that registers for the NodeClaim's instance (by provider id), syncs the NodeClaim's
// labels, taints, finalizer and ownership onto it, marks it initialized once it is ready for
// pods, and deletes a NodeClaim that outlives a step, so that its instance is terminated and
// its pods get another node. Every step reads the cluster as it is: a restart resumes where
// it stopped.
package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodeclaims"
)

// Name identifies the controller.
const Name = "nodeclaimlifecycle"

// Reasons of the conditions and Events, documented in docs/node-lifecycle.md.
const (
	ReasonRegistered        = "Registered"
	ReasonNodeNotRegistered = "NodeNotRegistered"
	ReasonInitialized       = "Initialized"
	ReasonNodeGone          = "NodeGone"
)

// Launches finish what a stopped controller's launches left: the launcher.
type Launches interface {
	// Launching is whether the NodeClaim's launch runs in this process.
	Launching(nc *v1.NodeClaim) bool
	// Resume finishes the launch of the NodeClaim's group.
	Resume(ctx context.Context, nc *v1.NodeClaim) error
}

// resumeAfter is how long after its creation a NodeClaim not launching in this process may have
// its launch resumed: long enough for the launch that created it to have recorded its instance
// and for the cache to show it, so that only a stopped controller's launches are resumed.
const resumeAfter = 10 * time.Second

// concurrentReconciles is how many NodeClaims are reconciled at once: each is independent, and a
// launch of hundreds registers as many nodes at once, each a few API writes.
const concurrentReconciles = 50

// Options configure the controller.
type Options struct {
	Client client.Client
	// Reader reads from the API server, for a node whose write conflicted: the cache may not show
	// the write it conflicted with yet. Client when nil.
	Reader   client.Reader
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// Timeouts of each step; DefaultLaunchTimeout and DefaultRegistrationTimeout when zero, and
	// for the initialization the node ready timeout the caller passes.
	Timeouts Timeouts
	// Launches resume launches; nil when nothing launches in this process.
	Launches Launches
}

// Controller reconciles NodeClaims that are not being deleted.
type Controller struct {
	client   client.Client
	reader   client.Reader
	recorder record.EventRecorder
	clock    clock.PassiveClock
	timeouts Timeouts
	launches Launches
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a recorder and a clock", Name)
	}
	if options.Timeouts.Initialization <= 0 {
		return nil, fmt.Errorf("the %s controller needs an initialization timeout", Name)
	}
	options.Timeouts.Launch = cmp.Or(options.Timeouts.Launch, DefaultLaunchTimeout)
	options.Timeouts.Registration = cmp.Or(options.Timeouts.Registration, DefaultRegistrationTimeout)
	var reader client.Reader = options.Client
	if options.Reader != nil {
		reader = options.Reader
	}
	return &Controller{client: options.Client, reader: reader, recorder: options.Recorder, clock: options.Clock, timeouts: options.Timeouts, launches: options.Launches}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches NodeClaims, and nodes for the NodeClaim of their instance.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.nodeClaimsOf(ctx, o.(*corev1.Node))
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrentReconciles}).
		Complete(c)
}

// nodeClaimsOf are the NodeClaims of the node's instance.
func (c *Controller) nodeClaimsOf(ctx context.Context, node *corev1.Node) []reconcile.Request {
	if node.Spec.ProviderID == "" {
		return nil
	}
	var list v1.NodeClaimList
	if err := c.client.List(ctx, &list, client.MatchingFields{nodeclaims.NodeClaimProviderIDField: node.Spec.ProviderID}); err != nil {
		log.FromContext(ctx).Error(err, "listing the nodeclaims of a node", "node", node.Name)
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}
	}
	return out
}

// Reconcile moves a NodeClaim through registration and initialization, and deletes one that
// outlived its step or whose node is gone.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	ctx = cloudmetrics.WithController(ctx, Name)
	nc := &v1.NodeClaim{}
	if err := c.client.Get(ctx, request.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if resumed, result, err := c.resume(ctx, nc); resumed || err != nil {
		return result, err
	}
	stored := nc.DeepCopy()
	deleteFor, err := c.step(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		// The lock refuses a write made on a read the cache had not brought up to date, which
		// would write a transition again, and count it again; the update the read missed brings
		// the NodeClaim back.
		if err := c.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching the status of nodeclaim %s, %w", nc.Name, err))
		}
		metrics.NodeClaimConditionsWritten(stored, nc)
	}
	if deleteFor == "" {
		reason, remaining := c.timeouts.Expired(nc, c.clock.Now())
		if reason == "" {
			return reconcile.Result{RequeueAfter: remaining}, nil
		}
		deleteFor = reason
	}
	return reconcile.Result{}, c.delete(ctx, nc, deleteFor)
}

// resume finishes the launch of a NodeClaim a stopped controller left, one not launched, or
// deletes it once a resume fails past the launch timeout. It reports whether it acted; the
// NodeClaim's update brings it back. A launched one waits for its kubelet to register its node.
func (c *Controller) resume(ctx context.Context, nc *v1.NodeClaim) (bool, reconcile.Result, error) {
	if c.launches == nil || c.launches.Launching(nc) {
		return false, reconcile.Result{}, nil
	}
	if !nc.IsTrue(v1.ConditionTypeLaunched) {
		if nc.Annotations[launcher.LaunchGroupAnnotationKey] == "" {
			return false, reconcile.Result{}, nil
		}
		if wait := nc.CreationTimestamp.Add(resumeAfter).Sub(c.clock.Now()); wait > 0 {
			return true, reconcile.Result{RequeueAfter: wait}, nil
		}
		err := c.launches.Resume(ctx, nc)
		if reason, _ := c.timeouts.Expired(nc, c.clock.Now()); err != nil && reason != "" {
			// A launch that cannot be settled (the cloud refuses the first call's parameters
			// again, say) would be resumed for ever: past the launch timeout the NodeClaim goes,
			// as any not launched in time, and an instance the first call left is garbage
			// collection's once no NodeClaim of its group awaits its record.
			log.FromContext(ctx).Info("gave up resuming the launch of a nodeclaim", "nodeclaim", nc.Name, "error", err.Error())
			return true, reconcile.Result{}, c.delete(ctx, nc, reason)
		}
		if errors.Is(err, launcher.ErrLaunchUnsettled) {
			return true, reconcile.Result{RequeueAfter: resumeAfter}, nil
		}
		if err == nil {
			log.FromContext(ctx).Info("resumed the launch of a nodeclaim", "nodeclaim", nc.Name)
		}
		return true, reconcile.Result{}, err
	}
	return false, reconcile.Result{}, nil
}

// step registers and initializes the NodeClaim's node as far as it can, in nc's status; it
// returns why the NodeClaim must go when its node was deleted.
func (c *Controller) step(ctx context.Context, nc *v1.NodeClaim) (deleteFor string, err error) {
	if !nc.IsTrue(v1.ConditionTypeLaunched) {
		return "", nil
	}
	node, err := nodeclaims.NodeFor(ctx, c.client, nc)
	if err != nil {
		return "", err
	}
	if node == nil {
		if nc.IsTrue(v1.ConditionTypeRegistered) {
			return ReasonNodeGone, nil
		}
		nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotRegistered, "No node has registered for instance "+nc.Status.ProviderID+" yet")
		return "", nil
	}
	if node.DeletionTimestamp != nil {
		// The node is being drained and its instance terminated: the NodeClaim goes with it.
		return ReasonNodeGone, nil
	}
	if err := c.register(ctx, nc, node); err != nil {
		return "", err
	}
	return "", c.initialize(ctx, nc, node)
}

// register matches the node the kubelet registered for the NodeClaim's instance: it syncs the
// NodeClaim onto the node, then lifts the unregistered taint, which lets pods run there. Two
// writes, so that a node never runs pods without its NodeClaim's labels and taints; a restart
// between them finds the taint still there and registers again. A registered node is not
// synced again: what was lifted since (a startup taint, the batch's hold) stays lifted.
func (c *Controller) register(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) error {
	if !nodeclaims.Registered(node) {
		synced := func(node *corev1.Node) *corev1.Node { return nodeclaims.WithNotReadyTaint(nodeclaims.Sync(nc, node)) }
		if err := c.patchNode(ctx, node, synced); err != nil {
			return fmt.Errorf("syncing nodeclaim %s onto node %s, %w", nc.Name, node.Name, err)
		}
		killpoint.Reached(killpoint.NodeRegistered)
		if err := c.patchNode(ctx, node, func(node *corev1.Node) *corev1.Node { return nodeclaims.Register(nc, node) }); err != nil {
			return fmt.Errorf("registering node %s of nodeclaim %s, %w", node.Name, nc.Name, err)
		}
	}
	nc.Status.NodeName = node.Name
	if !nc.IsTrue(v1.ConditionTypeRegistered) {
		nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, ReasonRegistered, "")
		c.recorder.Eventf(nc, corev1.EventTypeNormal, ReasonRegistered, "Node %s registered for instance %s", node.Name, nc.Status.ProviderID)
	}
	return nil
}

// patchNode patches node into want(node), when they differ, and leaves node as stored. An
// optimistic lock: a merge patch replaces the taints whole, and must not drop a taint written
// since the read. A write that conflicts (the kubelet, the batch, the termination controller
// write the same node while it registers) is made again at once on the node as the API server
// has it, a few times, rather than left to the work queue's backoff: each registration waited
// behind the others' retries, and a launch of hundreds of nodes took minutes to register.
func (c *Controller) patchNode(ctx context.Context, node *corev1.Node, want func(*corev1.Node) *corev1.Node) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		desired := want(node)
		if equality.Semantic.DeepEqual(node, desired) {
			return nil
		}
		err := c.client.Patch(ctx, desired, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			*node = *desired
			return nil
		}
		if apierrors.IsConflict(err) {
			fresh := &corev1.Node{}
			if readErr := c.reader.Get(ctx, client.ObjectKeyFromObject(node), fresh); readErr != nil {
				return readErr
			}
			*node = *fresh
		}
		return err
	})
}

// initialize marks the node and its NodeClaim initialized once the node is ready for pods.
// A NodeClaim hydrated from a node launched before NodeClaims is initialized as built; its node
// gets the label here all the same.
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) error {
	done := nc.IsTrue(v1.ConditionTypeInitialized)
	if !done {
		if ok, reason, message := nodeclaims.Initialized(nc, node); !ok {
			nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionUnknown, reason, message)
			return nil
		}
	}
	if node.Labels[v1.NodeInitializedLabelKey] != "true" {
		initialized := node.DeepCopy()
		if initialized.Labels == nil {
			initialized.Labels = map[string]string{}
		}
		initialized.Labels[v1.NodeInitializedLabelKey] = "true"
		if err := c.client.Patch(ctx, initialized, client.MergeFrom(node)); err != nil {
			return fmt.Errorf("labelling node %s initialized, %w", node.Name, err)
		}
	}
	if done {
		return nil
	}
	nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, ReasonInitialized, "")
	c.recorder.Eventf(nc, corev1.EventTypeNormal, ReasonInitialized, "Node %s is initialized", node.Name)
	return nil
}

// delete deletes the NodeClaim for the reason: its termination deletes its node and terminates
// its instance.
func (c *Controller) delete(ctx context.Context, nc *v1.NodeClaim, reason string) error {
	// The precondition keeps a NodeClaim that moved on since it was read.
	if err := c.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s, %w", nc.Name, err))
	}
	message := map[string]string{
		ReasonLaunchTimedOut:         fmt.Sprintf("No instance was launched within %s; deleted", c.timeouts.Launch),
		ReasonRegistrationTimedOut:   fmt.Sprintf("Instance %s registered no node within %s of its launch; deleted, the instance is terminated", nc.Status.ProviderID, c.timeouts.Registration),
		ReasonInitializationTimedOut: fmt.Sprintf("Node %s was not ready for pods within %s of registering; deleted, the instance is terminated", nc.Status.NodeName, c.timeouts.Initialization),
		ReasonNodeGone:               fmt.Sprintf("Node %s was deleted; deleted, the instance is terminated", nc.Status.NodeName),
	}[reason]
	eventType := corev1.EventTypeWarning
	if reason == ReasonNodeGone {
		eventType = corev1.EventTypeNormal
	}
	c.recorder.Event(nc, eventType, reason, message)
	log.FromContext(ctx).Info("deleted nodeclaim", "nodeclaim", nc.Name, "reason", reason)
	return nil
}
