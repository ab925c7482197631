// Package status keeps each NodePool's status: how many nodes it has and their capacity (what its
// limits count), and whether it can launch — ValidationSucceeded, NodeClassReady (its
// EC2NodeClass's own Ready condition, or why it has none) and Ready — with an Event when Ready
// changes.
package status

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Name identifies the controller.
const Name = "nodepoolstatus"

// Options configure the controller.
type Options struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// Controller writes the NodePools' status.
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

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches NodePools, the classes they name and the NodeClaims launched for them.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodePool{}).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.nodePoolsOf)).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetLabels()[v1.NodePoolLabelKey]; name != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
			}
			return nil
		})).
		Complete(c)
}

// nodePoolsOf are the NodePools naming the class.
func (c *Controller) nodePoolsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1.NodePoolList
	if err := c.client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if ref := list.Items[i].Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// Reconcile reads the NodePool, its class and its NodeClaims, and writes what Decide makes of
// them when that differs from the stored status.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.client.Get(ctx, request.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var class *awsv1.EC2NodeClass
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name != "" {
		class = &awsv1.EC2NodeClass{}
		if err := c.client.Get(ctx, types.NamespacedName{Name: ref.Name}, class); err != nil {
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("getting EC2NodeClass %s, %w", ref.Name, err)
			}
			class = nil
		}
	}
	var claims v1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the nodeclaims of nodepool %s, %w", np.Name, err)
	}
	status := Decide(np, class, claims.Items)
	if equality.Semantic.DeepEqual(status, np.Status) {
		return reconcile.Result{}, nil
	}
	stored := np.DeepCopy()
	np.Status = status
	if err := c.client.Status().Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching the status of nodepool %s, %w", np.Name, err))
	}
	c.tellReadiness(np, meta.FindStatusCondition(stored.Status.Conditions, v1.ConditionTypeReady))
	return reconcile.Result{}, nil
}

// tellReadiness emits an Event when the NodePool's Ready condition changed status: a Warning
// with the reason it cannot launch, or Normal when it can again.
func (c *Controller) tellReadiness(np *v1.NodePool, before *metav1.Condition) {
	after := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionTypeReady)
	if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason) {
		return
	}
	if after.Status == metav1.ConditionTrue {
		c.recorder.Event(np, corev1.EventTypeNormal, v1.ConditionTypeReady, "NodePool can launch nodes")
		return
	}
	c.recorder.Event(np, corev1.EventTypeWarning, after.Reason, after.Message)
}
