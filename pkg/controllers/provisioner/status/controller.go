// Package status keeps a Provisioner's status.resources, the total capacity of the nodes it
// launched that still exist, current as nodes come, change and go. It writes that field only:
// lastScaleTime and the Ready condition belong to the provisioning controller.
package status

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
)

// Name identifies the controller.
const Name = "provisionerstatus"

// Options configure the controller.
type Options struct {
	Client client.Client
}

// Controller sums the capacity of each Provisioner's nodes.
type Controller struct {
	client client.Client
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil {
		return nil, fmt.Errorf("the %s controller needs a client", Name)
	}
	return &Controller{client: options.Client}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// SetupWithManager watches Provisioners and the nodes that name one.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		// Status writes, this controller's and the provisioning controller's, change nothing here.
		For(&v1alpha5.Provisioner{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var requests []reconcile.Request
			for _, name := range nodes.ProvisionerOf(o) {
				requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
			return requests
		})).
		Complete(c)
}

// Reconcile writes the sum of the capacity of the Provisioner's nodes into status.resources.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	provisioner := &v1alpha5.Provisioner{}
	if err := c.client.Get(ctx, request.NamespacedName, provisioner); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nodeList := &corev1.NodeList{}
	// The index reads only this Provisioner's nodes. Capacity only reads them, so the cache's
	// own objects are summed without a copy; nothing keeps them past the sum.
	if err := c.client.List(ctx, nodeList, client.MatchingFields{nodes.ProvisionerField: provisioner.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the provisioner's nodes, %w", err)
	}
	resources := Capacity(nodeList.Items)
	if equality.Semantic.DeepEqual(resources, provisioner.Status.Resources) {
		return reconcile.Result{}, nil
	}
	stored := provisioner.DeepCopy()
	provisioner.Status.Resources = resources
	// A merge patch of this one field leaves the rest of the status to its owners.
	if err := c.client.Status().Patch(ctx, provisioner, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching status.resources, %w", err))
	}
	return reconcile.Result{}, nil
}

// Capacity is the sum of the nodes' capacity, resource by resource; nil for no resources.
// Nodes being deleted count until they are gone: their instances still run.
func Capacity(nodeList []corev1.Node) corev1.ResourceList {
	var total corev1.ResourceList
	for i := range nodeList {
		for name, quantity := range nodeList[i].Status.Capacity {
			if total == nil {
				total = corev1.ResourceList{}
			}
			sum := total[name]
			sum.Add(quantity)
			total[name] = sum
		}
	}
	return total
}
