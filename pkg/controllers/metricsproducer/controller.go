// Package metricsproducer reconciles MetricsProducers: on a period and whenever the nodes or
// pods a capacity producer reads change, it computes the producer's signal, exports it as
// gauges on the controller's /metrics and records it in status. Ready holds only while the
// last computation succeeded; after a failure the gauges are withdrawn, so that nothing
// scales on a stale value, while status keeps the last good reading.
package metricsproducer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// ReasonCalculated is the reason of the Event emitted when a producer recovers.
const ReasonCalculated = "Calculated"

// DefaultPeriod is how often a producer is recomputed when no period is configured.
const DefaultPeriod = 10 * time.Second

// Controller reconciles MetricsProducers.
type Controller struct {
	client   client.Client
	kinds    producers.Kinds
	recorder record.EventRecorder
	clock    clock.PassiveClock
	period   time.Duration
}

// NewController builds a controller that computes each producer with kinds at least every
// period (DefaultPeriod when zero). clk must be the clock kinds was built with.
func NewController(kubeClient client.Client, kinds producers.Kinds, recorder record.EventRecorder, clk clock.PassiveClock, period time.Duration) *Controller {
	if period <= 0 {
		period = DefaultPeriod
	}
	return &Controller{client: kubeClient, kinds: kinds, recorder: recorder, clock: clk, period: period}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "metricsproducer" }

// SetupWithManager watches MetricsProducers' specs, and nodes and pods for the capacity
// producers, and indexes pods by node for the producers' reads.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	if err := pods.IndexNodeName(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	enqueueCapacityProducers := handler.EnqueueRequestsFromMapFunc(c.capacityProducers)
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		// Status writes of our own do not change the generation and need no reconcile.
		For(&v1alpha1.MetricsProducer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, enqueueCapacityProducers, builder.WithPredicates(nodeCapacityChanged)).
		Watches(&corev1.Pod{}, enqueueCapacityProducers, builder.WithPredicates(podPlacementChanged)).
		Complete(c)
}

// controller-gen reads RBAC markers only from comments that document no declaration.
// +kubebuilder:rbac:groups=autoscaling.karpenter.sh,resources=metricsproducers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.karpenter.sh,resources=metricsproducers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile computes one producer, exports its gauges and writes its status.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	mp := &v1alpha1.MetricsProducer{}
	if err := c.client.Get(ctx, request.NamespacedName, mp); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(request.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting metricsproducer %s, %w", request.NamespacedName, err)
	}
	if mp.DeletionTimestamp != nil {
		c.forget(request.NamespacedName)
		return reconcile.Result{}, nil
	}
	stored := mp.DeepCopy()
	result := c.produce(ctx, mp)
	if !equality.Semantic.DeepEqual(stored.Status, mp.Status) {
		if err := c.client.Status().Patch(ctx, mp, client.MergeFrom(stored)); err != nil {
			if apierrors.IsNotFound(err) {
				c.forget(request.NamespacedName)
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("patching the status of metricsproducer %s, %w", request.NamespacedName, err)
		}
	}
	return reconcile.Result{RequeueAfter: c.requeueAfter(result.NextChange)}, nil
}

// produce runs mp's producer and applies the outcome: on success its gauges and its kind's
// status; on failure no gauge and the previous status. The producer only reads mp.
func (c *Controller) produce(ctx context.Context, mp *v1alpha1.MetricsProducer) producers.Result {
	key := client.ObjectKeyFromObject(mp)
	conditions := mp.StatusConditions()
	before := conditions.GetCondition(v1alpha1.Calculable).DeepCopy()
	result, err := c.kinds.Produce(ctx, mp)
	if err != nil {
		producers.Delete(key)
		reason := producers.ReasonOf(err)
		conditions.MarkFalse(v1alpha1.Calculable, reason, "%s", err.Error())
		// One Event per transition or change of cause, not one per period: messages of cloud
		// errors carry request ids and differ every time.
		if before == nil || before.Status != corev1.ConditionFalse || before.Reason != reason {
			c.recorder.Event(mp, corev1.EventTypeWarning, reason, err.Error())
		}
		log.FromContext(ctx).Info("metricsproducer not calculable", "reason", reason, "error", err.Error())
		return producers.Result{}
	}
	producers.Export(key, result.Samples)
	result.WriteStatus(&mp.Status)
	conditions.MarkTrue(v1alpha1.Calculable)
	if before != nil && before.Status == corev1.ConditionFalse {
		c.recorder.Event(mp, corev1.EventTypeNormal, ReasonCalculated, "Calculable again after "+before.Reason)
	}
	return result
}

// requeueAfter is the period, or less when the value is known to change sooner.
func (c *Controller) requeueAfter(nextChange time.Time) time.Duration {
	if nextChange.IsZero() {
		return c.period
	}
	// The workqueue may fire a little early; a millisecond past the change is on its far side.
	return min(c.period, max(nextChange.Sub(c.clock.Now())+time.Millisecond, time.Millisecond))
}

func (c *Controller) forget(key types.NamespacedName) {
	producers.Delete(key)
	c.kinds.Forget(key)
}

// capacityProducers maps a node or pod event to the producers that read nodes and pods.
func (c *Controller) capacityProducers(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1alpha1.MetricsProducerList{}
	if err := c.client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing metricsproducers for a node or pod change")
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if producers.ReadsNodesAndPods(&list.Items[i].Spec) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}

// nodeCapacityChanged passes node events that can change a capacity producer's value, not
// the heartbeats that update a node's status every few seconds.
var nodeCapacityChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, updated := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return !equality.Semantic.DeepEqual(old.Labels, updated.Labels) ||
			old.Spec.Unschedulable != updated.Spec.Unschedulable ||
			!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
			!equality.Semantic.DeepEqual(old.Status.Allocatable, updated.Status.Allocatable) ||
			nodes.ReadyStatus(old) != nodes.ReadyStatus(updated)
	},
}

// podPlacementChanged passes pod events that can change a capacity producer's value:
// creation, deletion, binding, termination, and the scheduler giving up on a pod.
var podPlacementChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, updated := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return old.Spec.NodeName != updated.Spec.NodeName ||
			old.Status.Phase != updated.Status.Phase ||
			(old.DeletionTimestamp == nil) != (updated.DeletionTimestamp == nil) ||
			scheduledReason(old) != scheduledReason(updated)
	},
}

func scheduledReason(pod *corev1.Pod) string {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled {
			return string(condition.Status) + "/" + condition.Reason
		}
	}
	return ""
}
