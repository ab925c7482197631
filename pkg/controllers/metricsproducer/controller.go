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
	"knative.dev/pkg/apis"
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
	"karpenter.sh/karpenter/pkg/conditions"
	"karpenter.sh/karpenter/pkg/events"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/nodes"
)

// ReasonCalculated is the reason of the Event emitted when a producer recovers.
const ReasonCalculated = "Calculated"

// recovered is the Event of a producer that is Calculable again.
var recovered = &events.Recovery{
	Reason:  ReasonCalculated,
	Message: func(was *apis.Condition) string { return "Calculable again after " + was.Reason },
}

// DefaultPeriod is how often a producer is recomputed when no period is configured.
const DefaultPeriod = 10 * time.Second

// Name identifies the controller.
const Name = "metricsproducer"

// Options configure the controller.
type Options struct {
	Client client.Client
	// Kinds computes each kind of producer; built with Clock.
	Kinds    producers.Kinds
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// Period is how often each producer is recomputed without a watch event; DefaultPeriod
	// when zero.
	Period time.Duration
}

// Controller reconciles MetricsProducers.
type Controller struct {
	client   client.Client
	kinds    producers.Kinds
	recorder record.EventRecorder
	clock    clock.PassiveClock
	period   time.Duration
}

// New builds the controller. The pod index pods.NodeNameField must be registered
// with the manager whose client it is given.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a recorder and a clock", Name)
	}
	if options.Period <= 0 {
		options.Period = DefaultPeriod
	}
	return &Controller{client: options.Client, kinds: options.Kinds, recorder: options.Recorder, clock: options.Clock, period: options.Period}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// SetupWithManager watches MetricsProducers' specs, and nodes and pods for the capacity
// producers.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
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
	conditions.KeepTransitionTimes(stored.Status.Conditions, mp.Status.Conditions)
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
		events.OnConditionTransition(c.recorder, mp, before, conditions.GetCondition(v1alpha1.Calculable), recovered)
		log.FromContext(ctx).Info("metricsproducer not calculable", "reason", reason, "error", err.Error())
		return producers.Result{}
	}
	producers.Export(key, result.Samples)
	result.WriteStatus(&mp.Status)
	if result.Partial != nil {
		// What was computed is exported, so Calculable stays True; its reason names the part
		// that is missing.
		conditions.MarkTrueWithReason(v1alpha1.Calculable, result.Partial.Reason, "%s", result.Partial.Error())
	} else {
		conditions.MarkTrue(v1alpha1.Calculable)
	}
	events.OnConditionTransition(c.recorder, mp, before, conditions.GetCondition(v1alpha1.Calculable), recovered)
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
	// Every node and pod event lists every producer; only their keys and specs are read, so the
	// cache's own objects do, uncopied.
	if err := c.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
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
