package horizontalautoscaler

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

// Priorities in the controller's queue: at a period boundary the autoscalers whose metric
// changed since their last evaluation go first, since theirs is the decision lag that counts.
const (
	priorityUnchanged = 0
	priorityChanged   = 1
)

// unchangedHold is how long after a boundary the autoscalers whose metric did not change wait
// before they are evaluated (a tenth of the period when that is shorter). Priorities order only
// what is waiting: without the hold every worker is already busy with an unchanged evaluation,
// each reading its target's scale, by the time the first changed metric is known, and a change
// waits for a worker and then shares the API server with them. Held, the boundary's changed
// evaluations — a scale read, two status writes and a scale write — start at once on an API
// server not yet busy with the others (at N = 1000: lag after the boundary p99 1.49 s without
// it; docs/benchmarks.md).
const unchangedHold = 250 * time.Millisecond

// enqueueAtBoundaries is the controller's period: at every boundary it enqueues every
// HorizontalAutoscaler in the cache, each as soon as its metrics are read as of the boundary,
// with priorityChanged when they differ from its status's currentMetrics (and at once), the others
// after unchangedHold. The queries go
// through the shared client, so the evaluations that follow ask nothing more of Prometheus.
// An autoscaler still being evaluated, or whose query of an earlier boundary has not
// answered, or not yet evaluated by this process, is enqueued without a query: a hung query
// holds one slot, not one per period. Whether the metric of one under way changed is unknown,
// and it is enqueued as changed: the last evaluations of a period run when the next boundary
// comes, and a change must not wait behind a whole period's evaluations.
func (c *Controller) enqueueAtBoundaries(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	go func() {
		for {
			boundary := c.evaluationTime().Add(c.options.Period)
			timer := c.options.Clock.NewTimer(boundary.Sub(c.options.Clock.Now()))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C():
			}
			// Its own goroutine: while every query slot is held by a hung query it waits, and
			// the next boundary must still come.
			go c.enqueueAll(ctx, queue, boundary)
		}
	}()
	return nil
}

// enqueueAll enqueues every HorizontalAutoscaler for the evaluation at boundary; it returns
// once every one is enqueued or has a query under way, and waits for a free boundary slot
// before starting each query.
func (c *Controller) enqueueAll(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request], boundary time.Time) {
	list := &v1alpha1.HorizontalAutoscalerList{}
	// Read only: the queries need the spec and the status's metrics, nothing is modified.
	if err := c.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing the horizontal autoscalers to evaluate; they are evaluated at the next boundary")
		return
	}
	hold := min(unchangedHold, c.options.Period/10)
	add := func(name types.NamespacedName, priority int) {
		request := reconcile.Request{NamespacedName: name}
		var after time.Duration
		if priority == priorityUnchanged {
			after = hold
		}
		if pq, ok := queue.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(priority), After: after}, request)
			return
		}
		queue.AddAfter(request, after)
	}
	for i := range list.Items {
		ha := &list.Items[i]
		name := types.NamespacedName{Namespace: ha.Namespace, Name: ha.Name}
		if claimed, evaluated := c.busy.claimIdle(name); !claimed {
			priority := priorityUnchanged
			if evaluated {
				priority = priorityChanged
			}
			add(name, priority)
			continue
		}
		// At most as many boundary queries as query slots are under way: a goroutine for each
		// of N autoscalers would mostly wait for a slot, and their stacks would count in the
		// controller's memory at every boundary.
		select {
		case c.boundarySlots <- struct{}{}:
		case <-ctx.Done():
			c.busy.done(name)
			return
		}
		go func() {
			defer func() { <-c.boundarySlots }()
			defer c.busy.done(name)
			priority := priorityUnchanged
			if c.metricsChanged(ctx, ha, boundary) {
				priority = priorityChanged
			}
			add(name, priority)
		}()
	}
}

// metricsChanged reads ha's metrics as of at and tells whether they differ from those its
// last evaluation recorded.
func (c *Controller) metricsChanged(ctx context.Context, ha *v1alpha1.HorizontalAutoscaler, at time.Time) bool {
	observations, _ := c.observe(ctx, ha, at)
	return !equality.Semantic.DeepEqual(currentMetrics(ha.Spec.Metrics, observations), ha.Status.CurrentMetrics)
}

// busySet counts, per HorizontalAutoscaler, the evaluations and boundary queries under way,
// and remembers which were evaluated at all by this process.
type busySet struct {
	mu        sync.Mutex
	names     map[types.NamespacedName]int
	evaluated map[types.NamespacedName]bool
}

// claimIdle marks name busy if it was evaluated before and nothing is under way for it, and
// tells whether it did, and whether name was evaluated before. One never evaluated is still
// queued from the watch's initial list: a query now would be a second one if its own hangs.
func (b *busySet) claimIdle(name types.NamespacedName) (claimed, evaluated bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	evaluated = b.evaluated[name]
	if b.names[name] > 0 || !evaluated {
		return false, evaluated
	}
	b.names[name] = 1
	return true, true
}

// start marks name busy, and evaluated, whatever else is under way for it.
func (b *busySet) start(name types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.names[name]++
	b.evaluated[name] = true
}

// forget drops a deleted autoscaler.
func (b *busySet) forget(name types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.evaluated, name)
}

func (b *busySet) done(name types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.names[name]--; b.names[name] <= 0 {
		delete(b.names, name)
	}
}
