// Package termination runs the karpenter.sh/termination finalizer of the nodes Karpenter
// launched: once such a node is deleted it cordons the node, drains it through the Eviction
// API so that PodDisruptionBudgets hold, terminates its instance and only then lets the Node
// object go. Every step reads the cluster as it is, so a restart resumes where it stopped.
package termination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
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
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/seconds"
)

// Name identifies the controller.
const Name = "nodetermination"

// Retry bounds of an eviction a PodDisruptionBudget refused, when none are configured.
const (
	DefaultMinRetryDelay = 100 * time.Millisecond
	DefaultMaxRetryDelay = 10 * time.Second
)

// recheckPeriod is how often at the latest a drain that waits looks at its node again, so
// that an instance gone meanwhile (a spot reclaim during a blocked drain) releases the node.
const recheckPeriod = 30 * time.Second

// Event reasons, documented in docs/node-lifecycle.md.
const (
	ReasonCordoned        = "Cordoned"
	ReasonDrainBlocked    = "DrainBlocked"
	ReasonDrainWaiting    = "DrainWaiting"
	ReasonEvictionBlocked = "EvictionBlocked"
	ReasonDrainDeadline   = "DrainDeadlineExceeded"
	// ReasonAwaitingVolumeDetachment: drained, the instance waits for its volumes to detach.
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	ReasonTerminated               = "InstanceTerminated"
	ReasonFinalizerRestored        = "TerminationFinalizerRestored"
)

const (
	evictionSubresource = "eviction"
	// pdbRefusal is in the message of an eviction a PodDisruptionBudget refused.
	pdbRefusal = "disruption budget"
)

// Options configure the controller.
type Options struct {
	Client client.Client
	// Instances terminates the node's instance.
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	// MinRetryDelay and MaxRetryDelay bound the exponential backoff after an eviction a
	// PodDisruptionBudget refused; DefaultMinRetryDelay and DefaultMaxRetryDelay when zero.
	MinRetryDelay, MaxRetryDelay time.Duration
}

// Controller drains and terminates deleted nodes.
type Controller struct {
	client    client.Client
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	// backoff spaces the retries of refused evictions, per node; a drain that progresses
	// starts it over.
	backoff workqueue.TypedRateLimiter[types.NamespacedName]
	// awaited are, per node whose instance waits for its volumes to detach, the attachments
	// its last AwaitingVolumeDetachment Event named: one Event per set, not one per look.
	awaitedMu sync.Mutex
	awaited   map[types.UID]string
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, an instance provider, a recorder and a clock", Name)
	}
	if options.MinRetryDelay <= 0 {
		options.MinRetryDelay = DefaultMinRetryDelay
	}
	if options.MaxRetryDelay <= 0 {
		options.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if options.MaxRetryDelay < options.MinRetryDelay {
		return nil, fmt.Errorf("the %s controller's retry delay %s exceeds its maximum %s", Name, options.MinRetryDelay, options.MaxRetryDelay)
	}
	return &Controller{
		client:    options.Client,
		instances: options.Instances,
		recorder:  options.Recorder,
		clock:     options.Clock,
		backoff:   workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](options.MinRetryDelay, options.MaxRetryDelay),
		awaited:   map[types.UID]string{},
	}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches the nodes being deleted that carry the finalizer, the nodes
// Karpenter launched that lack it, and the pods on those being deleted: a pod that leaves is
// the drain's next step.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			node := o.(*corev1.Node)
			return isTerminating(node) || lacksFinalizer(node)
		}))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.terminatingNodeOf)).
		Complete(c)
}

// terminatingNodeOf is the node of a pod when that node is being deleted by this controller.
func (c *Controller) terminatingNodeOf(ctx context.Context, o client.Object) []reconcile.Request {
	nodeName := o.(*corev1.Pod).Spec.NodeName
	if nodeName == "" {
		return nil
	}
	node := &corev1.Node{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil || !isTerminating(node) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nodeName}}}
}

// isTerminating is true for a node deleted while it carries the finalizer: this controller
// drains it.
func isTerminating(node *corev1.Node) bool {
	return node.DeletionTimestamp != nil && nodes.HasTerminationFinalizer(node)
}

// lacksFinalizer is true for a node Karpenter launched that lost its finalizer, or a node a
// kubelet registered again under Karpenter's labels after its deletion.
func lacksFinalizer(node *corev1.Node) bool {
	return nodes.IsLaunchedByKarpenter(node) && node.DeletionTimestamp == nil && !nodes.HasTerminationFinalizer(node)
}

// Reconcile puts the finalizer back on a node Karpenter launched that lacks it, and takes a
// deleted node one step further: cordon, drain, terminate, release; a node whose instance is
// gone is released at once.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, request.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if lacksFinalizer(node) {
		if registering, err := c.registeringByItsNodeClaim(ctx, node); registering || err != nil {
			return reconcile.Result{}, err
		}
		if wait := c.recordGraceLeft(node); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return reconcile.Result{}, c.restoreFinalizer(ctx, node)
	}
	if !isTerminating(node) {
		return reconcile.Result{}, nil
	}
	gone, err := c.instanceGone(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if gone {
		// Its pods stopped with the instance: evicting them would wait forever for a kubelet
		// that is not there to confirm.
		return reconcile.Result{}, c.release(ctx, node, fmt.Sprintf("Instance %s no longer runs; released the node without draining", node.Spec.ProviderID))
	}
	if err := c.cordon(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	keepOff := pods.CordonTaint
	var nc *v1.NodeClaim
	if key, ok := pools.Of(node.Labels); ok && key.IsNodePool() {
		// As upstream's v1 drains a NodePool's node: tainted disrupted, whoever deleted it,
		// and the pods that tolerate that taint are left to go with the instance.
		if err := nodes.TaintDisrupted(ctx, c.client, node); err != nil {
			return reconcile.Result{}, err
		}
		keepOff = nodes.DisruptedTaint
		var err error
		if nc, err = c.nodeClaimOf(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	deadline, err := c.deadline(ctx, node, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	onNode := &corev1.PodList{}
	if err := c.client.List(ctx, onNode, client.MatchingFields{pods.NodeNameField: node.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the node's pods, %w", err)
	}
	now := c.clock.Now()
	// An interrupted node's instance goes anyway: its do-not-disrupt pods are better moved
	// with the others than lost with it.
	keepDoNotDisrupt := nc != nil && nc.Annotations[v1.InterruptionReasonAnnotationKey] == ""
	drain := Drain{NodeReady: nodes.IsReady(node), Now: now, KeepOff: keepOff, KeepDoNotDisrupt: keepDoNotDisrupt}
	if deadline != nil {
		drain.Deadline = *deadline
	}
	step := Plan(onNode.Items, drain)
	if len(step.Delete) > 0 {
		if err := c.deletePods(ctx, node, step.Delete, *deadline, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !step.Drained {
		return c.drain(ctx, node, step, deadline, now)
	}
	c.backoff.Forget(request.NamespacedName)
	if wait, err := c.awaitDetach(ctx, node, onNode.Items, deadline, now); wait > 0 || err != nil {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	return reconcile.Result{}, c.terminate(ctx, node)
}

// cordon keeps the scheduler from placing pods on the node while it drains.
func (c *Controller) cordon(ctx context.Context, node *corev1.Node) error {
	if node.Spec.Unschedulable {
		return nil
	}
	stored := node.DeepCopy()
	node.Spec.Unschedulable = true
	if err := c.client.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("cordoning the node, %w", err)
	}
	log.FromContext(ctx).Info("cordoned the node for termination")
	c.recorder.Event(node, corev1.EventTypeNormal, ReasonCordoned, "Cordoned for termination; draining")
	return nil
}

// deadline is when the node's drain gives up evicting, from its Provisioner's
// terminationGracePeriodSeconds or, for a NodePool's node, its NodeClaim's (nc)
// terminationGracePeriod; nil when it has none.
func (c *Controller) deadline(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim) (*time.Time, error) {
	key, ok := pools.Of(node.Labels)
	if !ok {
		return nil, nil
	}
	if key.IsNodePool() {
		if nc == nil || nc.Spec.TerminationGracePeriod == nil {
			return nil, nil
		}
		deadline := node.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration)
		return &deadline, nil
	}
	name := key.Name
	provisioner := &v1alpha5.Provisioner{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, provisioner); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading provisioner %s, %w", name, err)
	}
	if provisioner.Spec.TerminationGracePeriodSeconds == nil {
		return nil, nil
	}
	deadline := node.DeletionTimestamp.Add(seconds.Duration(*provisioner.Spec.TerminationGracePeriodSeconds))
	return &deadline, nil
}

// nodeClaimOf is the NodeClaim a NodePool's node registered for; nil when it is gone.
func (c *Controller) nodeClaimOf(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	name, ok := nodeclaims.Owner(node)
	if !ok {
		return nil, nil
	}
	nc := &v1.NodeClaim{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading nodeclaim %s, %w", name, err)
	}
	return nc, nil
}

// drain evicts the step's pods; a refused eviction is retried with backoff, never forced.
// Until the drain is done the node is looked at again by the deadline, when the grace period
// of a pod it waits for on a node that is not Ready runs out, and every recheckPeriod at the
// latest: nothing else may change on the node when its instance goes, or its kubelet is gone.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, step Step, deadline *time.Time, now time.Time) (reconcile.Result, error) {
	key := types.NamespacedName{Name: node.Name}
	result := reconcile.Result{RequeueAfter: recheckPeriod}
	if deadline != nil {
		result.RequeueAfter = min(result.RequeueAfter, deadline.Sub(now))
	}
	if !step.Recheck.IsZero() {
		result.RequeueAfter = min(result.RequeueAfter, step.Recheck.Sub(now))
	}
	if len(step.Blocking) > 0 {
		c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonDrainBlocked, "Drain blocked by pod %s annotated %s: \"true\"",
			strings.Join(podNames(step.Blocking), ", "), pods.DoNotEvictAnnotationKey)
		// The pods' watch brings the annotation's removal.
		return result, nil
	}
	if len(step.Kept) > 0 {
		c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonDrainWaiting, "Drain waits for pod %s annotated %s",
			strings.Join(podNames(step.Kept), ", "), v1.DoNotDisruptAnnotationKey)
	}
	var refused, errs []error
	for _, pod := range step.Evict {
		switch err := c.evict(ctx, pod); {
		case err == nil:
		case apierrors.IsTooManyRequests(err):
			refused = append(refused, err)
			c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonEvictionBlocked, "Evicting pod %s/%s: %s", pod.Namespace, pod.Name, refusal(err))
		default:
			errs = append(errs, fmt.Errorf("evicting pod %s/%s, %w", pod.Namespace, pod.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if len(refused) == 0 {
		c.backoff.Forget(key)
		return result, nil
	}
	retry := c.backoff.When(key)
	result.RequeueAfter = min(result.RequeueAfter, retry)
	log.FromContext(ctx).V(1).Info("evictions refused, retrying", "pods", len(refused), "after", retry)
	return result, nil
}

// evict asks the API server to evict the pod, which it refuses with 429 while the pod's
// PodDisruptionBudget allows no disruption. A pod already gone, or replaced by another of the
// same name, is evicted.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := c.client.SubResource(evictionSubresource).Create(ctx, pod, eviction)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		killpoint.Reached(killpoint.PodEvicted)
	}
	return err
}

// refusal is why the API server refused an eviction, in words for an Event.
func refusal(err error) string {
	if strings.Contains(err.Error(), pdbRefusal) {
		return "a PodDisruptionBudget allows no disruption now; retrying"
	}
	return err.Error() + "; retrying"
}

// deletePods deletes the pods the drain deadline leaves no time to evict,
// PodDisruptionBudgets and do-not-evict annotations notwithstanding: the deadline is the
// NodeClaim's (or the Provisioner's) explicit bound. Each keeps what is left of its grace period
// until the deadline, none once it has passed.
func (c *Controller) deletePods(ctx context.Context, node *corev1.Node, toDelete []*corev1.Pod, deadline, now time.Time) error {
	names := make([]string, 0, len(toDelete))
	for _, pod := range toDelete {
		grace := int64(max(0, deadline.Sub(now)) / time.Second)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = min(grace, *pod.Spec.TerminationGracePeriodSeconds)
		}
		if err := c.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.GracePeriodSeconds(grace)); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting pod %s/%s at the drain deadline, %w", pod.Namespace, pod.Name, err)
		}
		names = append(names, pod.Namespace+"/"+pod.Name)
	}
	slices.Sort(names)
	log.FromContext(ctx).Info("drain deadline near or passed, deleted pods", "pods", names, "deadline", deadline)
	c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonDrainDeadline, "Drain deadline %s within the pods' grace periods or passed; deleted pods %s",
		deadline.UTC().Format(time.RFC3339), strings.Join(names, ", "))
	return nil
}

// podNames are the pods' namespaced names.
func podNames(list []*corev1.Pod) []string {
	out := make([]string, 0, len(list))
	for _, pod := range list {
		out = append(out, pod.Namespace+"/"+pod.Name)
	}
	return out
}

// terminate terminates the node's instance and then releases the Node object: the instance
// never outlives the node, and terminating again after a crash is harmless.
func (c *Controller) terminate(ctx context.Context, node *corev1.Node) error {
	if node.Spec.ProviderID != "" {
		if err := c.instances.Delete(ctx, node.Spec.ProviderID); err != nil {
			return fmt.Errorf("terminating instance %s, %w", node.Spec.ProviderID, err)
		}
		killpoint.Reached(killpoint.InstanceTerminated)
	}
	return c.release(ctx, node, fmt.Sprintf("Drained; terminated instance %s", node.Spec.ProviderID))
}

// instanceGone is true when the node's instance no longer runs: the cloud shuts it down or no
// longer has it.
func (c *Controller) instanceGone(ctx context.Context, node *corev1.Node) (bool, error) {
	if node.Spec.ProviderID == "" {
		return false, nil
	}
	_, err := cloudprovider.GetRunning(ctx, c.instances, node.Spec.ProviderID)
	if notFound := (*cloudprovider.NotFoundError)(nil); errors.As(err, &notFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading instance %s, %w", node.Spec.ProviderID, err)
	}
	return false, nil
}

// registeringByItsNodeClaim is whether the node still carries the taint it registered with and a
// NodeClaim not being deleted recorded its instance: that NodeClaim's registration adds the
// finalizer with its labels and taints, and a second writer of the fresh node only makes both
// conflict (a launch of hundreds of nodes registered minutes late so).
func (c *Controller) registeringByItsNodeClaim(ctx context.Context, node *corev1.Node) (bool, error) {
	if !nodeclaims.Registering(node) || node.Spec.ProviderID == "" {
		return false, nil
	}
	var list v1.NodeClaimList
	if err := c.client.List(ctx, &list, client.MatchingFields{nodeclaims.NodeClaimProviderIDField: node.Spec.ProviderID}); err != nil {
		return false, fmt.Errorf("listing the nodeclaim of node %s, %w", node.Name, err)
	}
	return slices.ContainsFunc(list.Items, func(nc v1.NodeClaim) bool { return nc.DeletionTimestamp == nil }), nil
}

// recordGrace is how long a registering node whose instance no NodeClaim has recorded yet is
// left to its NodeClaim: a launch records its instances once the cloud answers, a few writes
// per node, and a kubelet that registers at once (the emulator's) or a cache behind those writes
// showed most of a 500-node launch's nodes without their NodeClaim — the finalizer was "put
// back" on each, an Event each, and the two writers of every fresh node conflicted.
const recordGrace = time.Minute

// recordGraceLeft is how much longer a registering node with no NodeClaim recording its instance
// is left alone, 0 when it is not registering or the grace is over.
func (c *Controller) recordGraceLeft(node *corev1.Node) time.Duration {
	if !nodeclaims.Registering(node) || node.CreationTimestamp.IsZero() {
		return 0
	}
	return max(recordGrace-c.clock.Since(node.CreationTimestamp.Time), 0)
}

// restoreFinalizer puts the finalizer back on a node Karpenter launched, so that its deletion,
// by whoever, drains it and terminates its instance; until then no controller of Karpenter
// deletes it (nodes.IsRemovable).
func (c *Controller) restoreFinalizer(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	controllerutil.AddFinalizer(node, v1alpha5.TerminationFinalizer)
	// The finalizers are one list: the lock keeps another controller's, and a node deleted
	// since it was read (which refuses new finalizers) is read again.
	if err := c.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("adding the %s finalizer, %w", v1alpha5.TerminationFinalizer, err))
	}
	log.FromContext(ctx).Info("put the termination finalizer back on the node")
	c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonFinalizerRestored, "Node lacked the %s finalizer; added it back, so that its deletion drains it", v1alpha5.TerminationFinalizer)
	return nil
}

// release removes the finalizer, letting the Node object go.
func (c *Controller) release(ctx context.Context, node *corev1.Node, message string) error {
	c.attachmentsChanged(node, "")
	stored := node.DeepCopy()
	controllerutil.RemoveFinalizer(node, v1alpha5.TerminationFinalizer)
	// The finalizers are one list: the lock keeps another controller's.
	if err := c.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the %s finalizer, %w", v1alpha5.TerminationFinalizer, err))
	}
	terminatedTotal.WithLabelValues(metrics.NodePool(node), metrics.Zone(node)).Inc()
	lifetimeDuration.WithLabelValues(metrics.NodePool(node)).Observe(c.clock.Since(node.CreationTimestamp.Time).Seconds())
	log.FromContext(ctx).Info("released the node", "providerID", node.Spec.ProviderID, "message", message)
	c.recorder.Event(node, corev1.EventTypeNormal, ReasonTerminated, message)
	return nil
}
