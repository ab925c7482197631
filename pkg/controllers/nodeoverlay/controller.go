// Package nodeoverlay keeps each NodeOverlay's status: whether it applies to the instance types
// the Provisioners and NodePools plan with — ValidationSucceeded and Ready, False when it conflicts with an
// overlay of the same weight or matches no instance type — with an Event when Ready changes.
// It runs only with the NodeOverlay feature gate, as the planners apply overlays only then.
package nodeoverlay

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/overlay"
)

// Name identifies the controller.
const Name = "nodeoverlay"

// Options configure the controller.
type Options struct {
	Client        client.Client
	InstanceTypes cloudprovider.InstanceTypeLister
	Recorder      record.EventRecorder
	Clock         clock.Clock
}

// Controller writes the NodeOverlays' status.
type Controller struct {
	client        client.Client
	instanceTypes cloudprovider.InstanceTypeLister
	recorder      record.EventRecorder
	clock         clock.Clock
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.InstanceTypes == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, an instance type lister, a recorder and a clock", Name)
	}
	return &Controller{client: options.Client, instanceTypes: options.InstanceTypes, recorder: options.Recorder, clock: options.Clock}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners;nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// everyOverlay is the one request the controller reconciles: every NodeOverlay at once, as an
// overlay's conflicts and matches depend on all of them and on every pool's instance types.
var everyOverlay = reconcile.Request{NamespacedName: types.NamespacedName{Name: "every-nodeoverlay"}}

// SetupWithManager reconciles every NodeOverlay when any overlay, a Provisioner's or NodePool's
// spec, or an EC2NodeClass changes (a class's readiness decides whether its NodePools' instance
// types count). A pool's status, written every pass, does not change them; the cloud's instance
// types are read again at each resync.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	every := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{everyOverlay} })
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		Watches(&v1alpha1.NodeOverlay{}, every).
		Watches(&v1alpha5.Provisioner{}, every, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodePool{}, every, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&awsv1.EC2NodeClass{}, every).
		Complete(c)
}

// Reconcile applies every NodeOverlay to the instance types of every Provisioner and of every
// NodePool that takes part in the passes, as the planners do, and writes what became of each
// overlay where that differs from its stored status: one application for all of them, where
// reconciling each overlay on its own applied them all once per overlay. A pool whose instance
// types cannot be listed is left out, and the error returned so that they are reconciled again.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var overlays v1alpha1.NodeOverlayList
	if err := c.client.List(ctx, &overlays); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays, %w", err)
	}
	if len(overlays.Items) == 0 {
		return reconcile.Result{}, nil
	}
	pools, errs := c.pools(ctx)
	_, outcomes := overlay.Apply(pools, overlays.Items)
	now := c.clock.Now()
	for i := range overlays.Items {
		target := &overlays.Items[i]
		status := Decide(target, outcomes[target.Name], now)
		if equality.Semantic.DeepEqual(status, target.Status) {
			continue
		}
		stored := target.DeepCopy()
		target.Status = status
		if err := c.client.Status().Patch(ctx, target, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("patching the status of nodeoverlay %s, %w", target.Name, err))
			continue
		}
		c.tellReadiness(target, meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ConditionTypeReady))
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// pools are the instance types of the Provisioners and of the NodePools that take part in the
// passes (provisioning.NodePoolInstanceTypes), as NodeOverlays match them; with the errors of
// the pools left out.
func (c *Controller) pools(ctx context.Context) ([]overlay.Pool, []error) {
	var errs []error
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		errs = append(errs, fmt.Errorf("listing provisioners, %w", err))
	}
	var pools []overlay.Pool
	for i := range provisioners.Items {
		p := &provisioners.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		its, err := c.instanceTypes.InstanceTypes(ctx, provisioning.Constraints(p))
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the instance types of provisioner %s, %w", p.Name, err))
			continue
		}
		pools = append(pools, provisioning.OverlayPool(p, its))
	}
	var nodePools v1.NodePoolList
	if err := c.client.List(ctx, &nodePools); err != nil {
		errs = append(errs, fmt.Errorf("listing nodepools, %w", err))
	}
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		_, its, why, err := provisioning.NodePoolInstanceTypes(ctx, c.client, c.instanceTypes, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("nodepool %s, %w", np.Name, err))
		}
		if why != "" || err != nil {
			continue
		}
		pools = append(pools, provisioning.OverlayNodePool(np, its))
	}
	return pools, errs
}

// tellReadiness emits an Event when the overlay's Ready condition changed status or reason: a
// Warning saying why it does not apply, or Normal when it applies.
func (c *Controller) tellReadiness(o *v1alpha1.NodeOverlay, before *metav1.Condition) {
	after := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		return
	}
	if after.Status == metav1.ConditionTrue {
		c.recorder.Event(o, corev1.EventTypeNormal, v1alpha1.ConditionTypeReady, "NodeOverlay applies to the instance types it matches")
		return
	}
	c.recorder.Event(o, corev1.EventTypeWarning, after.Reason, after.Message)
}
