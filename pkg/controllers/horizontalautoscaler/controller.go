// Package horizontalautoscaler reconciles HorizontalAutoscalers: it reads their PromQL
// metrics, decides the replicas with pkg/autoscaler and writes them to the scale subresource
// of the target, whatever its kind.
package horizontalautoscaler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/conditions"
	"karpenter.sh/karpenter/pkg/events"
)

const (
	// Name identifies the controller.
	Name = "horizontalautoscaler"
	// DefaultPeriod is how often each HorizontalAutoscaler is evaluated: at every multiple of
	// it since the Unix epoch.
	DefaultPeriod = 10 * time.Second
	// DefaultWorkers is how many HorizontalAutoscalers are evaluated at once: one waiting on a
	// slow query holds one worker, not the others. An evaluation mostly waits on the API server
	// (a scale read and a status write) and all of a period's start at its boundary, so the
	// period's last decision comes about N × latency ÷ workers after it: 50 workers evaluated
	// 4.6 times as many per second as 10 at N = 1000 (docs/benchmarks.md).
	DefaultWorkers = 50
)

// ReasonTargetReplicasUnset is AbleToScale's reason while the target's spec replicas are unset.
const ReasonTargetReplicasUnset = "TargetReplicasUnset"

// MetricsClient evaluates a metric query at a time to one value, or says why it cannot.
type MetricsClient interface {
	QueryAt(ctx context.Context, query string, at time.Time) (float64, error)
}

// Options configure the controller.
type Options struct {
	// Client reads HorizontalAutoscalers from the cache and writes their status.
	Client client.Client
	// Config reaches the API server for discovery and the scale subresources.
	Config *rest.Config
	Mapper meta.RESTMapper
	// Metrics answers the metric queries.
	Metrics  MetricsClient
	Recorder record.EventRecorder
	Clock    clock.Clock
	// Period between evaluations of each HorizontalAutoscaler, which are at its multiples
	// since the Unix epoch; DefaultPeriod when zero.
	Period time.Duration
	// Tolerance is the fraction around a target within which nothing changes;
	// autoscaler.DefaultTolerance when nil.
	Tolerance *float64
	// MaxRetryDelay caps the backoff after an error, e.g. a missing target; one minute when zero.
	MaxRetryDelay time.Duration
	// Workers is how many HorizontalAutoscalers are evaluated concurrently; DefaultWorkers
	// when zero. Evaluations of one HorizontalAutoscaler never overlap.
	Workers int
}

// Controller reconciles HorizontalAutoscalers.
type Controller struct {
	options  Options
	client   client.Client
	mapper   meta.RESTMapper
	scales   scale.ScalesGetter
	scaleKey scale.ScaleKindResolver
	cache    discovery.CachedDiscoveryInterface
	recorder record.EventRecorder

	// discovery refreshes cache when a kind seems to serve no /scale, at most once per interval.
	discovery *discoveryRefresher
	// settled is what each HorizontalAutoscaler's last evaluation left behind.
	settled settledStatuses
	// busy holds the autoscalers whose evaluation or boundary query is under way.
	busy busySet
	// querySlots bounds the metric queries at once, evaluations' and boundaries' together,
	// to the number of workers.
	querySlots chan struct{}
	// boundarySlots bounds the boundary's goroutines, each reading one autoscaler's metrics,
	// to the number of workers.
	boundarySlots chan struct{}
}

// New builds the controller and its scale client over options.Mapper.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Config == nil || options.Mapper == nil ||
		options.Metrics == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a REST config and mapper, a metrics client, a recorder and a clock", Name)
	}
	if options.Period == 0 {
		options.Period = DefaultPeriod
	}
	if options.Tolerance == nil {
		options.Tolerance = ptr.To(autoscaler.DefaultTolerance)
	}
	if options.MaxRetryDelay == 0 {
		options.MaxRetryDelay = time.Minute
	}
	if options.Workers == 0 {
		options.Workers = DefaultWorkers
	}
	if options.Workers < 0 {
		return nil, fmt.Errorf("the %s controller needs at least one worker, not %d", Name, options.Workers)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(options.Config)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client, %w", err)
	}
	c := &Controller{
		options:       options,
		client:        options.Client,
		mapper:        options.Mapper,
		cache:         memory.NewMemCacheClient(discoveryClient),
		recorder:      options.Recorder,
		settled:       settledStatuses{byName: map[types.NamespacedName]settledStatus{}},
		busy:          busySet{names: map[types.NamespacedName]int{}, evaluated: map[types.NamespacedName]bool{}},
		querySlots:    make(chan struct{}, options.Workers),
		boundarySlots: make(chan struct{}, options.Workers),
	}
	c.discovery = &discoveryRefresher{cache: c.cache, clock: options.Clock, interval: discoveryRefreshInterval}
	c.scaleKey = scale.NewDiscoveryScaleKindResolver(c.cache)
	c.scales, err = scale.NewForConfig(options.Config, options.Mapper, dynamic.LegacyAPIPathResolverFunc, c.scaleKey)
	if err != nil {
		return nil, fmt.Errorf("creating a scale client, %w", err)
	}
	return c, nil
}

// Name implements the controllers package's reconciler.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=autoscaling.karpenter.sh,resources=horizontalautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.karpenter.sh,resources=horizontalautoscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: it reconciles on spec changes and at every
// period boundary, those whose metric changed first (enqueueAtBoundaries).
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// Status writes do not change the generation, so the controller's own writes do not
		// trigger it; the period does.
		For(&v1alpha1.HorizontalAutoscaler{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Func(c.enqueueAtBoundaries)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: c.options.Workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, c.options.MaxRetryDelay),
			NewQueue: func(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
				return newShutdownSafeQueue(name, rateLimiter)
			},
		}).
		Complete(c)
}

// Reconcile evaluates one HorizontalAutoscaler.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The cache may lag behind this controller's last status write. Every status write is
	// therefore conditional on the resourceVersion read, and the scale is written only after
	// such a write (the pending scale): a decision made on a stale history fails with a
	// conflict and is made again, it never cuts a window short. An evaluation that changes
	// nothing writes nothing only when it read the status the last evaluation settled on;
	// otherwise it writes all the same, conditionally, so that a stale read fails rather than
	// losing this evaluation's recommendation from the history.
	c.busy.start(req.NamespacedName)
	defer c.busy.done(req.NamespacedName)
	ha := &v1alpha1.HorizontalAutoscaler{}
	if err := c.client.Get(ctx, req.NamespacedName, ha); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Name, req.Namespace)
			c.settled.forget(req.NamespacedName)
			c.busy.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting the horizontal autoscaler, %w", err)
	}
	original := ha.DeepCopy()
	ha.StatusConditions().InitializeConditions()

	settled, confirmed := c.settled.get(req.NamespacedName, ha.ResourceVersion)
	status := &statusWriter{client: c.client, written: original, confirmed: confirmed}
	lastRecommended, err := c.reconcile(ctx, ha, status, settled.lastRecommended)
	if errors.Is(err, errScaleConflict) || apierrors.IsConflict(err) {
		// The target changed between reading and writing its scale, as it does during a
		// rollout, or the status changed since it was read: whatever was written is settled
		// by the next evaluation, which reads fresh state.
		// The rate-limited backoff of Requeue is the intent; RequeueAfter would fix the delay.
		return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // SA1019, see above.
	}
	patchErr := status.write(ctx, ha)
	if apierrors.IsConflict(patchErr) && err == nil {
		// Written since read (the cache lagged, or the spec changed): decide again from there.
		return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // SA1019, see above.
	}
	if patchErr != nil {
		c.settled.forget(req.NamespacedName)
		return reconcile.Result{}, errors.Join(err, fmt.Errorf("writing the status, %w", patchErr))
	}
	c.settled.set(req.NamespacedName, settledStatus{resourceVersion: ha.ResourceVersion, lastRecommended: lastRecommended})
	// Announced once written, so that a decision dropped for a conflict announces nothing.
	c.announceErrors(original, ha)
	// The next evaluation is at the next period boundary (enqueueAtBoundaries), not a
	// requeue: the queue would keep this evaluation's priority for it.
	return reconcile.Result{}, err
}

// evaluationTime is the period boundary an evaluation now belongs to: its metrics are read as
// of then, so that every HorizontalAutoscaler evaluated in one period sees the same values and
// shares identical queries.
func (c *Controller) evaluationTime() time.Time {
	now := c.options.Clock.Now()
	return now.Add(-time.Duration(now.UnixNano() % c.options.Period.Nanoseconds()))
}

// statusWriter patches the status with what changed since its last successful write, on
// condition that nothing else wrote it since. It skips the patch when nothing changed and the
// status read is known to be the latest (confirmed); unconfirmed, an unchanged status is still
// patched, with nothing but that condition, to confirm it. An evaluation writes twice when it
// scales (the pending scale, then the outcome), and the second patch must carry the clearing
// of what the first one set.
type statusWriter struct {
	client    client.Client
	written   *v1alpha1.HorizontalAutoscaler
	confirmed bool
}

func (w *statusWriter) write(ctx context.Context, ha *v1alpha1.HorizontalAutoscaler) error {
	conditions.KeepTransitionTimes(w.written.Status.Conditions, ha.Status.Conditions)
	if w.confirmed && equality.Semantic.DeepEqual(w.written.Status, ha.Status) {
		return nil
	}
	if err := w.client.Status().Patch(ctx, ha, client.MergeFromWithOptions(w.written, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	w.written, w.confirmed = ha.DeepCopy(), true
	return nil
}

// settledStatus is what an evaluation left behind: the resourceVersion of the status it read
// or wrote, and when that status's newest recommendation was last recommended, which the
// status does not record (autoscaler.Input.LastRecommended).
type settledStatus struct {
	resourceVersion string
	lastRecommended time.Time
}

// settledStatuses remembers the settled status of each HorizontalAutoscaler in this process.
// Lost on a restart, when every evaluation writes once to confirm what it read and the newest
// recommendations count as recommended until then.
type settledStatuses struct {
	mu     sync.Mutex
	byName map[types.NamespacedName]settledStatus
}

// get returns what was settled for name and whether resourceVersion is its status.
func (s *settledStatuses) get(name types.NamespacedName, resourceVersion string) (settledStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	settled, ok := s.byName[name]
	if !ok || settled.resourceVersion != resourceVersion {
		return settledStatus{}, false
	}
	return settled, true
}

func (s *settledStatuses) set(name types.NamespacedName, settled settledStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byName[name] = settled
}

func (s *settledStatuses) forget(name types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byName, name)
}

// errScaleConflict marks a scale update refused because the target changed since it was read.
var errScaleConflict = errors.New("the target changed since its scale was read")

// targetError is a failure to reach the scale target, reported on AbleToScale.
type targetError struct {
	reason string
	err    error
}

func (e *targetError) Error() string { return e.err.Error() }
func (e *targetError) Unwrap() error { return e.err }

// reconcile evaluates ha and returns when the newest recommendation of its status was last
// recommended.
func (c *Controller) reconcile(ctx context.Context, ha *v1alpha1.HorizontalAutoscaler, status *statusWriter, lastRecommended time.Time) (time.Time, error) {
	logger := log.FromContext(ctx)
	resource, target, err := c.getScale(ctx, ha)
	if err != nil {
		// A pending scale stays until the target can be read to settle it.
		return lastRecommended, c.markTargetError(ha, err)
	}
	now := c.options.Clock.Now()
	if pending := ha.Status.PendingScale; pending != nil {
		var applied bool
		ha.Status.ScaleEvents, applied = autoscaler.SettlePending(now, *pending, target.Spec.Replicas, ha.Status.ScaleEvents, ha.Spec.Behavior)
		if applied {
			ha.Status.LastScaleTime = &apis.VolatileTime{Inner: pending.Time}
		}
		ha.Status.PendingScale = nil
	}
	observations, failed := c.observe(ctx, ha, c.evaluationTime())
	if failed > 0 {
		errorsTotal.WithLabelValues(ha.Name, ha.Namespace, "MetricsUnavailable").Add(float64(failed))
	}
	decision := autoscaler.Decide(autoscaler.Input{
		Now:             now,
		Spec:            ha.Spec,
		SpecReplicas:    target.Spec.Replicas,
		StatusReplicas:  target.Status.Replicas,
		Observations:    observations,
		Recommendations: ha.Status.Recommendations,
		LastRecommended: lastRecommended,
		ScaleEvents:     ha.Status.ScaleEvents,
		Tolerance:       *c.options.Tolerance,
	})

	from := target.Spec.Replicas
	if decision.DesiredReplicas != from {
		// Recorded first: whatever happens between the scale write and the status write that
		// follows it, the next evaluation finds the change and counts it if it was made.
		ha.Status.PendingScale = autoscaler.PendingScale(now, from, decision.DesiredReplicas)
		if err := status.write(ctx, ha); err != nil {
			return lastRecommended, fmt.Errorf("recording the scale of %s from %d to %d before making it, %w", describeTarget(ha), from, decision.DesiredReplicas, err)
		}
		target.Spec.Replicas = decision.DesiredReplicas
		if _, err := c.scales.Scales(ha.Namespace).Update(ctx, resource, target, metav1.UpdateOptions{}); err != nil {
			// The write may have been made even so (a timeout); the pending scale stays for
			// the next evaluation to settle against the target.
			if apierrors.IsConflict(err) {
				return lastRecommended, fmt.Errorf("updating the scale of %s, %w: %w", describeTarget(ha), errScaleConflict, err)
			}
			return lastRecommended, c.markTargetError(ha, classify("FailedUpdateScale", fmt.Errorf("updating the scale of %s, %w", describeTarget(ha), err)))
		}
		logger.Info("scaled", "target", describeTarget(ha), "from", from, "to", decision.DesiredReplicas, "reason", decision.Summary())
		c.recorder.Eventf(ha, corev1.EventTypeNormal, "SuccessfulRescale", "Scaled %s from %d to %d: %s",
			describeTarget(ha), from, decision.DesiredReplicas, decision.Summary())
		ha.Status.LastScaleTime = &apis.VolatileTime{Inner: metav1.NewTime(now)}
		ha.Status.PendingScale = nil
	}
	ha.Status.ScaleEvents = autoscaler.RecordScale(now, ha.Status.ScaleEvents, decision.DesiredReplicas-from, ha.Spec.Behavior)
	ha.Status.Recommendations = decision.Recommendations
	ha.Status.CurrentReplicas = ptr.To(target.Status.Replicas)
	ha.Status.DesiredReplicas = ptr.To(decision.DesiredReplicas)
	ha.Status.CurrentMetrics = currentMetrics(ha.Spec.Metrics, observations)
	currentReplicasGauge.WithLabelValues(ha.Name, ha.Namespace).Set(float64(target.Status.Replicas))
	desiredReplicasGauge.WithLabelValues(ha.Name, ha.Namespace).Set(float64(decision.DesiredReplicas))
	c.markDecision(ha, decision, from)
	return decision.LastRecommended, nil
}

// getScale resolves scaleTargetRef to a resource with a scale subresource and reads its scale.
func (c *Controller) getScale(ctx context.Context, ha *v1alpha1.HorizontalAutoscaler) (schema.GroupResource, *autoscalingv1.Scale, error) {
	ref := ha.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupResource{}, nil, &targetError{reason: "InvalidScaleTargetRef", err: fmt.Errorf("parsing scaleTargetRef.apiVersion %q, %w", ref.APIVersion, err)}
	}
	mapping, err := c.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		reason := "FailedGetScale"
		if meta.IsNoMatchError(err) {
			reason = "UnknownScaleTargetKind"
		}
		return schema.GroupResource{}, nil, &targetError{reason: reason, err: fmt.Errorf("resolving %s, %w", describeTarget(ha), err)}
	}
	// The scale client asks discovery whether the resource serves /scale; a stale cache would
	// hide a scale subresource added since, so look again after a refresh, which the whole
	// controller may do only once per discoveryRefreshInterval.
	if _, err := c.scaleKey.ScaleForResource(mapping.Resource); err != nil {
		if c.discovery.refresh() {
			_, err = c.scaleKey.ScaleForResource(mapping.Resource)
		}
		if err != nil {
			return schema.GroupResource{}, nil, &targetError{reason: "NoScaleSubresource", err: fmt.Errorf("%s has no scale subresource, %w", describeTarget(ha), err)}
		}
	}
	resource := mapping.Resource.GroupResource()
	target, err := c.scales.Scales(ha.Namespace).Get(ctx, resource, ref.Name, metav1.GetOptions{})
	if isReplicasUnset(err) {
		return resource, nil, &targetError{reason: ReasonTargetReplicasUnset, err: fmt.Errorf(
			"%s has no spec replicas, so its size is unknown and it is not scaled until it has one (a ScalableNodeGroup adopts its node group's size), %w", describeTarget(ha), err)}
	}
	if err != nil {
		return resource, nil, classify("FailedGetScale", fmt.Errorf("getting the scale of %s, %w", describeTarget(ha), err))
	}
	return resource, target, nil
}

// isReplicasUnset tells the API server's refusal to read the scale of a custom resource whose
// specReplicasPath is unset (apiextensions-apiserver answers an internal error naming the
// field). Such a size is unknown, not zero, and is reported as such rather than as a failure.
func isReplicasUnset(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "spec replicas field") && strings.Contains(err.Error(), "does not exist")
}

// classify names an API error's reason for AbleToScale.
func classify(fallback string, err error) *targetError {
	switch {
	case apierrors.IsNotFound(err):
		return &targetError{reason: "ScaleTargetNotFound", err: err}
	case apierrors.IsForbidden(err):
		return &targetError{reason: "Forbidden", err: err}
	}
	return &targetError{reason: fallback, err: err}
}

// observe reads every metric as of at, timing each query, and counts the queries that failed.
func (c *Controller) observe(ctx context.Context, ha *v1alpha1.HorizontalAutoscaler, at time.Time) ([]autoscaler.Observation, int) {
	observations := make([]autoscaler.Observation, len(ha.Spec.Metrics))
	failed := 0
	for i, m := range ha.Spec.Metrics {
		if m.Prometheus == nil {
			observations[i] = autoscaler.Unavailable("the metric has no prometheus source")
			continue
		}
		value, err := c.query(ctx, m.Prometheus.Query, at)
		if err != nil {
			failed++
			observations[i] = autoscaler.Unavailable(err.Error())
			continue
		}
		observations[i] = autoscaler.Available(value)
	}
	return observations, failed
}

// query runs one query in one of the query slots.
func (c *Controller) query(ctx context.Context, query string, at time.Time) (float64, error) {
	select {
	case c.querySlots <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-c.querySlots }()
	start := time.Now()
	value, err := c.options.Metrics.QueryAt(ctx, query, at)
	queryDuration.Observe(time.Since(start).Seconds())
	return value, err
}

func currentMetrics(metrics []v1alpha1.Metric, observations []autoscaler.Observation) []v1alpha1.MetricStatus {
	var statuses []v1alpha1.MetricStatus
	for i, m := range metrics {
		if m.Prometheus == nil {
			continue
		}
		status := v1alpha1.MetricStatus{Prometheus: &v1alpha1.PrometheusMetricStatus{Query: m.Prometheus.Query}}
		if o := observations[i]; o.Available() {
			// Three decimals are plenty for a status and keep float noise out of it.
			if q, err := resource.ParseQuantity(strconv.FormatFloat(o.Value, 'f', 3, 64)); err == nil {
				status.Prometheus.Current.Value = &q
			}
		}
		statuses = append(statuses, status)
	}
	return statuses
}

// markTargetError records a failure to reach the target; the error is returned for a retry
// with backoff.
func (c *Controller) markTargetError(ha *v1alpha1.HorizontalAutoscaler, err error) error {
	reason := "FailedGetScale"
	var te *targetError
	if errors.As(err, &te) {
		reason = te.reason
	}
	errorsTotal.WithLabelValues(ha.Name, ha.Namespace, reason).Inc()
	// The replicas of a target that cannot be read are unknown, not what they last were.
	currentReplicasGauge.DeleteLabelValues(ha.Name, ha.Namespace)
	desiredReplicasGauge.DeleteLabelValues(ha.Name, ha.Namespace)
	ha.StatusConditions().MarkFalse(v1alpha1.AbleToScale, reason, "%s", err.Error())
	// The metrics are read only once the target is, so whether they are available is unknown.
	ha.StatusConditions().MarkUnknown(v1alpha1.Active, "TargetUnavailable", "the metrics are not read while the target cannot be reached; see AbleToScale")
	return err
}

// metricsGracePeriod is how long a new HorizontalAutoscaler whose metrics were never read waits
// before reporting them unavailable: a series exported by a new object (a MetricsProducer's
// gauge, say) appears only after Prometheus's next scrape.
const metricsGracePeriod = time.Minute

// awaitingFirstMetrics is true for an autoscaler younger than metricsGracePeriod that has not
// yet seen all its metrics; the rules that hold scale-down while a metric is missing apply all
// the same, only the warning waits.
func (c *Controller) awaitingFirstMetrics(ha *v1alpha1.HorizontalAutoscaler) bool {
	return c.options.Clock.Since(ha.CreationTimestamp.Time) < metricsGracePeriod &&
		!ha.StatusConditions().GetCondition(v1alpha1.Active).IsTrue()
}

// markDecision sets the conditions that explain a decision.
func (c *Controller) markDecision(ha *v1alpha1.HorizontalAutoscaler, d autoscaler.Decision, from int32) {
	conditions := ha.StatusConditions()
	var unavailable []string
	for i, m := range d.Metrics {
		if !m.Available {
			query := ""
			if source := ha.Spec.Metrics[i].Prometheus; source != nil {
				query = source.Query
			}
			unavailable = append(unavailable, fmt.Sprintf("%q: %s", query, m.Reason))
		}
	}
	if d.Disabled {
		msg := "scaling is disabled since the replica count of the target is zero; set minReplicas: 0 to scale from zero"
		conditions.MarkFalse(v1alpha1.Active, "ScalingDisabled", "%s", msg)
		conditions.MarkTrueWithReason(v1alpha1.AbleToScale, "ReadyForNewScale", "the target is reachable")
		conditions.MarkUnknown(v1alpha1.ScalingUnbounded, "ScalingDisabled", "%s", msg)
		return
	}
	switch {
	case len(ha.Spec.Metrics) == 0:
		conditions.MarkTrueWithReason(v1alpha1.Active, "NoMetrics", "no metrics: replicas are only held within [minReplicas, maxReplicas]")
	case len(unavailable) == 0:
		conditions.MarkTrueWithReason(v1alpha1.Active, "MetricsAvailable", "every metric was read")
	case c.awaitingFirstMetrics(ha):
		conditions.MarkUnknown(v1alpha1.Active, "AwaitingMetrics", "%d of %d metrics could not be read yet; a new autoscaler waits up to %s for Prometheus to scrape them before reporting MetricsUnavailable: %s",
			len(unavailable), len(ha.Spec.Metrics), metricsGracePeriod, strings.Join(unavailable, "; "))
	case len(unavailable) == len(ha.Spec.Metrics):
		conditions.MarkFalse(v1alpha1.Active, "MetricsUnavailable", "no metric could be read, replicas stay at %d: %s", from, strings.Join(unavailable, "; "))
	default:
		conditions.MarkFalse(v1alpha1.Active, "MetricsUnavailable", "%d of %d metrics could not be read, scale-down is suspended: %s",
			len(unavailable), len(ha.Spec.Metrics), strings.Join(unavailable, "; "))
	}

	// Being held by a window or a policy is the autoscaler working as configured, so
	// AbleToScale stays True and its reason and message say what holds it and until when.
	switch {
	case len(d.Holds) > 0:
		var messages []string
		for _, h := range d.Holds {
			messages = append(messages, h.Message)
		}
		conditions.MarkTrueWithReason(v1alpha1.AbleToScale, d.Holds[len(d.Holds)-1].Reason, "%s", strings.Join(messages, "; "))
	case d.DesiredReplicas != from:
		conditions.MarkTrueWithReason(v1alpha1.AbleToScale, "SucceededRescale", "scaled from %d to %s", from, autoscaler.Replicas(d.DesiredReplicas))
	default:
		conditions.MarkTrueWithReason(v1alpha1.AbleToScale, "ReadyForNewScale", "the target is reachable and nothing holds it back")
	}

	if d.Clamp != nil {
		conditions.MarkFalse(v1alpha1.ScalingUnbounded, d.Clamp.Reason, "%s", d.Clamp.Message)
	} else {
		conditions.MarkTrueWithReason(v1alpha1.ScalingUnbounded, "WithinBounds", "the recommendation of %s is within [%d, %d]",
			autoscaler.Replicas(d.Recommendation), autoscaler.MinReplicas(ha.Spec), ha.Spec.MaxReplicas)
		if len(ha.Spec.Metrics) > 0 && len(unavailable) == len(ha.Spec.Metrics) {
			conditions.MarkUnknown(v1alpha1.ScalingUnbounded, "MetricsUnavailable", "no recommendation while no metric can be read")
		}
	}
}

// announceErrors emits a Warning Event for each condition that has just become False with a
// new reason, so that a persisting error is reported once, not every period.
func (c *Controller) announceErrors(before, after *v1alpha1.HorizontalAutoscaler) {
	for _, t := range []apis.ConditionType{v1alpha1.Active, v1alpha1.AbleToScale} {
		events.OnConditionTransition(c.recorder, after, before.StatusConditions().GetCondition(t), after.StatusConditions().GetCondition(t), nil)
	}
}

func describeTarget(ha *v1alpha1.HorizontalAutoscaler) string {
	ref := ha.Spec.ScaleTargetRef
	return fmt.Sprintf("%s %s (%s)", ref.Kind, types.NamespacedName{Namespace: ha.Namespace, Name: ref.Name}, ref.APIVersion)
}
