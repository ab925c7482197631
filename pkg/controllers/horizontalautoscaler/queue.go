package horizontalautoscaler

import (
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// wakeNamespace marks the requests ShutDown adds to wake the workers: no object lives in a
// namespace of that name, so none is a real request.
const wakeNamespace = "\x00shutdown"

// wakeTimeout bounds how long ShutDown waits for the workers it woke before it shuts the queue
// down regardless.
const wakeTimeout = 5 * time.Second

// shutdownSafeQueue is controller-runtime's priority queue with a shutdown that cannot hang the
// controller (kubernetes-sigs/controller-runtime#3538, in v0.22): a worker waiting for an item
// when the queue shuts down returns without telling the queue, whose dispatcher may then block
// handing an item to it while holding the lock every other worker's Done needs, so the
// controller never stops. Here ShutDown first wakes every waiting worker with a request of its
// own, handed out the normal way, and shuts the queue down only once none is waiting.
type shutdownSafeQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]

	mu       sync.Mutex
	stopping bool
	waiting  int
	// idle is closed once stopping and no worker waits.
	idle chan struct{}
}

func newShutdownSafeQueue(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) *shutdownSafeQueue {
	return &shutdownSafeQueue{
		PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rateLimiter }),
		idle:          make(chan struct{}),
	}
}

// GetWithPriority returns the next request, or shutdown once ShutDown began.
func (q *shutdownSafeQueue) GetWithPriority() (reconcile.Request, int, bool) {
	q.mu.Lock()
	if q.stopping {
		q.mu.Unlock()
		return reconcile.Request{}, 0, true
	}
	q.waiting++
	q.mu.Unlock()

	request, priority, shutdown := q.PriorityQueue.GetWithPriority()

	q.mu.Lock()
	q.waiting--
	if q.stopping && q.waiting == 0 {
		close(q.idle)
	}
	q.mu.Unlock()
	if request.Namespace == wakeNamespace {
		q.PriorityQueue.Done(request)
		return reconcile.Request{}, 0, true
	}
	return request, priority, shutdown
}

// Get is GetWithPriority without the priority.
func (q *shutdownSafeQueue) Get() (reconcile.Request, bool) {
	request, _, shutdown := q.GetWithPriority()
	return request, shutdown
}

// ShutDown wakes the waiting workers, waits for them (at most wakeTimeout), then shuts the
// queue down.
func (q *shutdownSafeQueue) ShutDown() {
	q.mu.Lock()
	if q.stopping {
		q.mu.Unlock()
		return
	}
	q.stopping = true
	waiting := q.waiting
	if waiting == 0 {
		close(q.idle)
	}
	q.mu.Unlock()
	for i := range waiting {
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(math.MaxInt32)},
			reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wakeNamespace, Name: fmt.Sprint(i)}})
	}
	select {
	case <-q.idle:
	case <-time.After(wakeTimeout):
	}
	q.PriorityQueue.ShutDown()
}

// ShutDownWithDrain is ShutDown: controller-runtime drains nothing either.
func (q *shutdownSafeQueue) ShutDownWithDrain() { q.ShutDown() }
