// Package termination runs the karpenter.sh/termination finalizer of NodeClaims: a deleted
// NodeClaim deletes its node (whose own finalizer cordons and drains it through the Eviction
// API and terminates the instance), makes sure the instance is terminated, and only once the
// cloud says it is gone lets the NodeClaim go. An instance never outlives its NodeClaim.
package termination

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodeclaims"
)

// Name identifies the controller.
const Name = "nodeclaimtermination"

// Event reasons, documented in docs/node-lifecycle.md.
const (
	ReasonTerminating = "Terminating"
	ReasonTerminated  = "InstanceTerminated"
)

// terminationPoll is how often a NodeClaim whose instance is shutting down asks the cloud again:
// nothing else tells the controller when it is gone.
const terminationPoll = 5 * time.Second

// Launches says whether a NodeClaim's launch is still running in this process: until it
// returns, the NodeClaim may yet get an instance, which its termination must not miss.
type Launches interface {
	Launching(nc *v1.NodeClaim) bool
}

// Options configure the controller.
type Options struct {
	Client client.Client
	// Instances terminates and reads the NodeClaims' instances.
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	// Clock times the terminations.
	Clock clock.PassiveClock
	// Launches may be nil when nothing launches in this process.
	Launches Launches
}

// Controller terminates deleted NodeClaims.
type Controller struct {
	client    client.Client
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	launches  Launches
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, an instance provider, a recorder and a clock", Name)
	}
	return &Controller{client: options.Client, instances: options.Instances, recorder: options.Recorder, clock: options.Clock, launches: options.Launches}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches the NodeClaims that carry the finalizer, and the nodes going away
// under them.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return controllerutil.ContainsFinalizer(o, v1.TerminationFinalizer)
		}))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name, ok := nodeclaims.Owner(o); ok {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
			}
			return nil
		})).
		Complete(c)
}

// Reconcile takes a deleted NodeClaim one step further: delete its node, wait for it to go,
// terminate the instance, wait for the cloud to say it is gone, release the NodeClaim.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.client.Get(ctx, request.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	if nc.Status.ProviderID == "" {
		if c.launches != nil && c.launches.Launching(nc) {
			// Its launch records the instance it gets first; the NodeClaim's update brings it back.
			return reconcile.Result{RequeueAfter: terminationPoll}, nil
		}
		// Never launched: nothing to terminate. An instance a crashed launch left without its
		// record is garbage collection's.
		return reconcile.Result{}, c.release(ctx, nc, "Deleted before an instance was launched for it")
	}
	node, err := nodeclaims.NodeFor(ctx, c.client, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node != nil {
		if node.DeletionTimestamp == nil {
			if err := c.client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting node %s of nodeclaim %s, %w", node.Name, nc.Name, err)
			}
			c.recorder.Eventf(nc, corev1.EventTypeNormal, ReasonTerminating, "Deleted node %s: it is drained, then instance %s is terminated", node.Name, nc.Status.ProviderID)
		}
		// The node's finalizer drains it; its going brings the NodeClaim back.
		return reconcile.Result{}, nil
	}
	// The node's own termination terminated the instance already, as a rule: the cloud is
	// asked to terminate it only when it still runs, so an instance is terminated once. The
	// NodeClaim stays until the instance is gone, not only shutting down, as upstream's: until
	// then it may hold its volumes and network interfaces, and it is still billed.
	instance, err := c.instances.Get(ctx, nc.Status.ProviderID)
	if notFound := (*cloudprovider.NotFoundError)(nil); !errors.As(err, &notFound) {
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("reading instance %s of nodeclaim %s, %w", nc.Status.ProviderID, nc.Name, err)
		}
		if instance.State.ShutDown() {
			return reconcile.Result{RequeueAfter: terminationPoll}, nil
		}
		if err := c.instances.Delete(ctx, nc.Status.ProviderID); err != nil {
			return reconcile.Result{}, fmt.Errorf("terminating instance %s of nodeclaim %s, %w", nc.Status.ProviderID, nc.Name, err)
		}
		killpoint.Reached(killpoint.InstanceTerminated)
		return reconcile.Result{RequeueAfter: terminationPoll}, nil
	}
	return reconcile.Result{}, c.release(ctx, nc, fmt.Sprintf("Instance %s is terminated", nc.Status.ProviderID))
}

// release removes the finalizer, letting the NodeClaim go.
func (c *Controller) release(ctx context.Context, nc *v1.NodeClaim, message string) error {
	stored := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	// The finalizers are one list: the lock keeps another controller's.
	if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the %s finalizer of nodeclaim %s, %w", v1.TerminationFinalizer, nc.Name, err))
	}
	metrics.NodeClaimTerminated(stored, c.clock.Since(stored.DeletionTimestamp.Time))
	log.FromContext(ctx).Info("released the nodeclaim", "nodeclaim", nc.Name, "providerID", nc.Status.ProviderID)
	c.recorder.Event(nc, corev1.EventTypeNormal, ReasonTerminated, message)
	return nil
}
