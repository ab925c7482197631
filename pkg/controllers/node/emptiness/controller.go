// Package emptiness deletes the Ready nodes of a Provisioner with ttlSecondsAfterEmpty once
// they have run no pods but DaemonSet, mirror and finished ones, and had none nominated to
// them, for that long; the node's termination finalizer then terminates its instance. The
// controller marks a node empty as its pods come and go; the deletion is the first Provisioner
// method of the disruption controller's pass (Method). A Provisioner that also consolidates has
// its empty nodes decided on by consolidation alone.
package emptiness

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/seconds"
)

// Name identifies the controller.
const Name = "nodeemptiness"

// Event reasons, documented in docs/node-lifecycle.md.
const (
	ReasonEmpty        = "NodeEmpty"
	ReasonNotEmpty     = "NodeNoLongerEmpty"
	ReasonEmptyDeleted = "EmptyNodeDeleted"
)

// Options configure the controller.
type Options struct {
	Client client.Client
	// Reader reads the node's pods from the API server right before the node is deleted,
	// so that a pod the cache has not seen yet keeps its node; the Method's.
	Reader   client.Reader
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
}

// Controller marks empty nodes, and clears the mark of a node no longer empty.
type Controller struct {
	client   client.Client
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a recorder and a clock", Name)
	}
	return &Controller{client: options.Client, recorder: options.Recorder, clock: options.Clock}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches the nodes Karpenter launched, the pods bound or nominated to them
// (on an update, the node the pod was on or nominated to before as well as after) and the
// Provisioners whose TTL applies to them.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		// ttlSecondsAfterEmpty is a Provisioner's; a NodePool's empty nodes are its disruption's.
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := pools.ProvisionerOf(o.GetLabels())
			return ok
		}))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			pod := o.(*corev1.Pod)
			name := pod.Spec.NodeName
			if name == "" {
				name = pods.NominatedNode(pod)
			}
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		})).
		Watches(&v1alpha5.Provisioner{}, handler.EnqueueRequestsFromMapFunc(c.provisionerNodes)).
		Complete(c)
}

// provisionerNodes are the nodes a Provisioner launched, whose TTL may just have changed.
func (c *Controller) provisionerNodes(ctx context.Context, o client.Object) []reconcile.Request {
	list := &corev1.NodeList{}
	if err := c.client.List(ctx, list, client.MatchingFields{nodes.ProvisionerField: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing a provisioner's nodes", "provisioner", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// Action is what a node's emptiness asks of the controller.
type Action int

const (
	// Wait leaves the node as it is.
	Wait Action = iota
	// Mark annotates the node with when it became empty: now.
	Mark
	// Clear removes the annotation of a node that is no longer empty, or no longer has a TTL.
	Clear
	// Delete removes a node that has been empty for its TTL.
	Delete
)

// Decide is what to do with a node at now, given the TTL of its Provisioner (nil when it
// has none) and the pods bound or nominated to it.
func Decide(node *corev1.Node, ttl *time.Duration, onNode []corev1.Pod, now time.Time) Action {
	if !nodes.IsLaunchedByKarpenter(node) || node.DeletionTimestamp != nil {
		return Wait
	}
	stamp, marked := node.Annotations[v1alpha5.EmptinessTimestampAnnotationKey]
	if ttl == nil || !IsEmpty(onNode) {
		if marked {
			return Clear
		}
		return Wait
	}
	// A node that is not Ready is the readiness and termination controllers' concern; its
	// pods may only be unreported. One still awaiting its pods (launching, or Ready while
	// Kubernetes has yet to lift its not-ready taint) has none bound yet: they come once it
	// opens, and its update brings it back here.
	if !nodes.IsReady(node) || nodes.AwaitsItsPods(node) {
		return Wait
	}
	since, err := time.Parse(time.RFC3339, stamp)
	if !marked || err != nil || since.After(now) {
		return Mark
	}
	if since.Add(*ttl).After(now) {
		return Wait
	}
	// Deleted without its termination finalizer, the node would go without a drain; the
	// finalizer's return updates the node, which brings it back here.
	if !nodes.IsRemovable(node) {
		return Wait
	}
	return Delete
}

// IsEmpty is whether the pods bound or nominated to a node leave it with nothing to run: none
// of them would need room elsewhere were the node to go (pods.IsMovable). A nominated pod
// waits for the node, which kube-scheduler binds it to once there is room (its claims bound,
// or the pods it preempts gone).
func IsEmpty(onNode []corev1.Pod) bool {
	for i := range onNode {
		if pods.IsMovable(&onNode[i]) {
			return false
		}
	}
	return true
}

// Reconcile marks or clears one node; the disruption pass deletes it (Method).
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, request.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A pod's node, mapped here, may be a NodePool's.
	if _, ok := pools.ProvisionerOf(node.Labels); !ok {
		return reconcile.Result{}, nil
	}
	ttl, err := ttlOf(ctx, c.client, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	onNode, err := onNode(ctx, c.client, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.clock.Now()
	switch Decide(node, ttl, onNode, now) {
	case Mark:
		if err := c.annotate(ctx, node, now.UTC().Format(time.RFC3339)); err != nil {
			return reconcile.Result{}, err
		}
		c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonEmpty, "Node runs no pods; deleting it after ttlSecondsAfterEmpty (%s) unless one arrives", *ttl)
	case Clear:
		if err := c.annotate(ctx, node, ""); err != nil {
			return reconcile.Result{}, err
		}
		c.recorder.Event(node, corev1.EventTypeNormal, ReasonNotEmpty, "Node is no longer empty, or its Provisioner no longer deletes empty nodes")
	}
	return reconcile.Result{}, nil
}

// ttlOf is the node's Provisioner's ttlSecondsAfterEmpty, nil when it has none or is gone, and
// when it consolidates: consolidation then decides on its empty nodes too (v1alpha5.Warnings).
func ttlOf(ctx context.Context, reader client.Reader, node *corev1.Node) (*time.Duration, error) {
	provisioner := &v1alpha5.Provisioner{}
	if err := reader.Get(ctx, types.NamespacedName{Name: node.Labels[v1alpha5.ProvisionerNameLabelKey]}, provisioner); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("getting the node's provisioner, %w", err))
	}
	if provisioner.Spec.TTLSecondsAfterEmpty == nil || provisioner.ConsolidationEnabled() {
		return nil, nil
	}
	ttl := seconds.Duration(*provisioner.Spec.TTLSecondsAfterEmpty)
	return &ttl, nil
}

// onNode are the pods bound to the node and those nominated to it.
func onNode(ctx context.Context, reader client.Reader, node *corev1.Node) ([]corev1.Pod, error) {
	bound := &corev1.PodList{}
	if err := reader.List(ctx, bound, client.MatchingFields{pods.NodeNameField: node.Name}); err != nil {
		return nil, fmt.Errorf("listing the node's pods, %w", err)
	}
	nominated := &corev1.PodList{}
	if err := reader.List(ctx, nominated, client.MatchingFields{pods.NominatedNodeField: node.Name}); err != nil {
		return nil, fmt.Errorf("listing the pods nominated to the node, %w", err)
	}
	out := bound.Items
	for i := range nominated.Items {
		if pods.NominatedNode(&nominated.Items[i]) == node.Name {
			out = append(out, nominated.Items[i])
		}
	}
	return out, nil
}

// annotate sets the emptiness timestamp, or removes it when empty.
func (c *Controller) annotate(ctx context.Context, node *corev1.Node, stamp string) error {
	stored := node.DeepCopy()
	if stamp == "" {
		delete(node.Annotations, v1alpha5.EmptinessTimestampAnnotationKey)
	} else {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[v1alpha5.EmptinessTimestampAnnotationKey] = stamp
	}
	if err := c.client.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating the node with %s, %w", v1alpha5.EmptinessTimestampAnnotationKey, err))
	}
	return nil
}
