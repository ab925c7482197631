// Package warnings sends a Warning Event on a Provisioner for each setting it has that is
// admitted but likely not meant (v1alpha5.Warnings), each time its spec changes and once when
// the controller starts. The webhook says the same at admission; the Events reach whoever reads
// the Provisioner later, or applied it while the webhook was down.
package warnings

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// Name identifies the controller.
const Name = "provisionerwarnings"

// Options configure the controller.
type Options struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// Controller warns of Provisioners' settings.
type Controller struct {
	client   client.Client
	recorder record.EventRecorder
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil {
		return nil, fmt.Errorf("the %s controller needs a client and a recorder", Name)
	}
	return &Controller{client: options.Client, recorder: options.Recorder}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches Provisioners' specs: status writes change no generation.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1alpha5.Provisioner{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(c)
}

// Reconcile sends the Provisioner's warnings.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	provisioner := &v1alpha5.Provisioner{}
	if err := c.client.Get(ctx, request.NamespacedName, provisioner); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	for _, w := range provisioner.Warnings() {
		c.recorder.Event(provisioner, corev1.EventTypeWarning, w.Reason, w.Message)
	}
	return reconcile.Result{}, nil
}
