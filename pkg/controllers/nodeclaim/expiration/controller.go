// Package expiration deletes each NodePool's NodeClaim once its spec.expireAfter has passed since
// it was created: forcefully, as upstream, whatever the disruption budgets say; the termination
// drains its node within its terminationGracePeriod. A Provisioner's nodes expire by its
// ttlSecondsUntilExpired instead (pkg/controllers/node/expiration).
package expiration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/metrics"
)

// Name identifies the controller.
const Name = "nodeclaimexpiration"

// ReasonExpired is the Event on a NodeClaim deleted for its age.
const ReasonExpired = "Expired"

// Options configure the controller.
type Options struct {
	Client   client.Client
	Recorder record.EventRecorder
	Clock    clock.Clock
}

// Controller deletes expired NodeClaims.
type Controller struct {
	Options
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a recorder and a clock", Name)
	}
	return &Controller{Options: options}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches NodeClaims.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named(Name).For(&v1.NodeClaim{}).Complete(c)
}

// Reconcile deletes a NodePool's NodeClaim past its expireAfter, and otherwise comes back when it
// will be.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.Client.Get(ctx, request.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	expireAfter := nc.Spec.ExpireAfter.Duration
	if nc.DeletionTimestamp != nil || nc.Labels[v1.NodePoolLabelKey] == "" || expireAfter == nil {
		return reconcile.Result{}, nil
	}
	if remaining := nc.CreationTimestamp.Add(*expireAfter).Sub(c.Clock.Now()); remaining > 0 {
		return reconcile.Result{RequeueAfter: remaining}, nil
	}
	if err := c.Client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting expired nodeclaim %s, %w", nc.Name, err))
	}
	metrics.NodeClaimDisrupted(nc, metrics.ReasonExpired)
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, ReasonExpired, "Deleted: created more than its expireAfter (%s) ago", nc.Spec.ExpireAfter)
	log.FromContext(ctx).Info("deleted an expired nodeclaim", "nodeclaim", nc.Name, "expireAfter", nc.Spec.ExpireAfter.String())
	return reconcile.Result{}, nil
}
