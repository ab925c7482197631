// Package readiness opens the nodes Karpenter launched to pods once their kubelet reports
// Ready, by removing the karpenter.sh/not-ready taint, and deletes those that never become
// Ready, so that their termination finalizer terminates the instance behind them.
package readiness

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
)

// Name identifies the controller.
const Name = "nodereadiness"

// DefaultTimeout is how long a launched node may take to become Ready when no timeout is
// configured: an instance boots and joins in a few minutes, or never.
const DefaultTimeout = 15 * time.Minute

// Event reasons, documented in docs/node-lifecycle.md.
const (
	ReasonReady      = "NodeReady"
	ReasonNeverReady = "NodeNeverReady"
)

// Options configure the controller.
type Options struct {
	Client   client.Client
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// Timeout is how long after its creation a node that has never been Ready is deleted;
	// DefaultTimeout when zero.
	Timeout time.Duration
}

// Controller reconciles the nodes Karpenter launched until they are Ready.
type Controller struct {
	client   client.Client
	recorder record.EventRecorder
	clock    clock.PassiveClock
	timeout  time.Duration
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a recorder and a clock", Name)
	}
	if options.Timeout <= 0 {
		options.Timeout = DefaultTimeout
	}
	return &Controller{client: options.Client, recorder: options.Recorder, clock: options.Clock, timeout: options.Timeout}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches the nodes Karpenter launched.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return nodes.IsLaunchedByKarpenter(o.(*corev1.Node))
		}))).
		Complete(c)
}

// Action is what a node's readiness asks of the controller.
type Action int

const (
	// Wait leaves the node as it is: it is not Karpenter's to open, or not Ready yet.
	Wait Action = iota
	// RemoveTaint opens a Ready node to pods.
	RemoveTaint
	// Delete removes a node that did not become Ready in time.
	Delete
)

// Decide is what to do with a node at now: the taint marks a node that has never been Ready,
// so a node without it is left alone whatever its condition says later. While waiting,
// recheck is when the node times out.
func Decide(node *corev1.Node, now time.Time, timeout time.Duration) (action Action, recheck time.Duration) {
	if !nodes.IsLaunchedByKarpenter(node) || node.DeletionTimestamp != nil || !hasNotReadyTaint(node) {
		return Wait, 0
	}
	if nodes.IsReady(node) {
		return RemoveTaint, 0
	}
	if age := now.Sub(node.CreationTimestamp.Time); age < timeout {
		return Wait, timeout - age
	}
	// Deleted without its termination finalizer, the node would go without a drain; the
	// finalizer's return updates the node, which brings it back here.
	if !nodes.IsRemovable(node) {
		return Wait, 0
	}
	return Delete, 0
}

// Reconcile removes the not-ready taint of a Ready node or deletes a node past its timeout.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, request.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	action, recheck := Decide(node, c.clock.Now(), c.timeout)
	switch action {
	case RemoveTaint:
		patch, err := nodes.RemoveTaintPatch(node, v1alpha5.NotReadyTaintKey)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := c.client.Patch(ctx, node, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			if nodes.ChangedSinceRead(err) {
				// The taints moved since the node was read (as kube-controller-manager's node
				// lifecycle lifts its own not-ready taint): read it again, as after a conflict.
				log.FromContext(ctx).V(1).Info("taints changed since the node was read; reading it again")
				return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // SA1019: the rate-limited backoff is the intent.
			}
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing the %s taint, %w", v1alpha5.NotReadyTaintKey, err))
		}
		log.FromContext(ctx).Info("node is ready, removed its not-ready taint")
		c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonReady, "Node is Ready; removed taint %s", v1alpha5.NotReadyTaintKey)
	case Delete:
		// The preconditions keep a node that turned Ready since it was read.
		if err := c.client.Delete(ctx, node, client.Preconditions{UID: &node.UID, ResourceVersion: &node.ResourceVersion}); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting a node that never became ready, %w", err))
		}
		log.FromContext(ctx).Info("deleted a node that never became ready", "timeout", c.timeout)
		c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonNeverReady,
			"Node did not become Ready within %s of its launch; deleted it, its instance is terminated", c.timeout)
	case Wait:
		if recheck > 0 {
			return reconcile.Result{RequeueAfter: recheck}, nil
		}
	}
	return reconcile.Result{}, nil
}

func hasNotReadyTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha5.NotReadyTaintKey })
}
