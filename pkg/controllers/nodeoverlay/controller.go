// Package nodeoverlay keeps each NodeOverlay's status: whether it applies to the instance types
// the Provisioners plan with — ValidationSucceeded and Ready, False when it conflicts with an
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
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager reconciles every NodeOverlay when any overlay or a Provisioner's spec
// changes: an overlay's conflicts and matches depend on all of them. A Provisioner's status,
// written every pass, does not change them; the cloud's instance types are read again at each
// resync of the overlays.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	every := handler.EnqueueRequestsFromMapFunc(c.everyOverlay)
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		Watches(&v1alpha1.NodeOverlay{}, every).
		Watches(&v1alpha5.Provisioner{}, every, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(c)
}

func (c *Controller) everyOverlay(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.NodeOverlayList
	if err := c.client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// Reconcile applies every NodeOverlay to every Provisioner's instance types, as the planners
// do, and writes what became of the requested one when that differs from its stored status.
// A Provisioner whose instance types cannot be listed is left out, and the error returned so
// the overlay is reconciled again.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	var overlays v1alpha1.NodeOverlayList
	if err := c.client.List(ctx, &overlays); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays, %w", err)
	}
	var target *v1alpha1.NodeOverlay
	for i := range overlays.Items {
		if overlays.Items[i].Name == request.Name {
			target = &overlays.Items[i]
		}
	}
	if target == nil {
		return reconcile.Result{}, nil
	}
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing provisioners, %w", err)
	}
	var pools []overlay.Pool
	var errs []error
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
	_, outcomes := overlay.Apply(pools, overlays.Items)
	status := Decide(target, outcomes[target.Name], c.clock.Now())
	if !equality.Semantic.DeepEqual(status, target.Status) {
		stored := target.DeepCopy()
		target.Status = status
		if err := c.client.Status().Patch(ctx, target, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching the status of nodeoverlay %s, %w", target.Name, err))
		}
		c.tellReadiness(target, meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ConditionTypeReady))
	}
	return reconcile.Result{}, errors.Join(errs...)
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
