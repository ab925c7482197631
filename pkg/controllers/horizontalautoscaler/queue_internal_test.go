package horizontalautoscaler

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestShutdownSafeQueueStopsItsWorkers runs workers the way controller-runtime does, with items
// coming and going, and shuts the queue down at every moment of that: every worker returns, and
// none is handed a request ShutDown added to wake it. controller-runtime's own priority queue
// left a worker blocked in Done in some of these rounds (kubernetes-sigs/controller-runtime#3538).
func TestShutdownSafeQueueStopsItsWorkers(t *testing.T) {
	const rounds, workers, items = 200, 10, 30
	for round := range rounds {
		q := newShutdownSafeQueue("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		var wg sync.WaitGroup
		var processed atomic.Int64
		handedWake := make(chan reconcile.Request, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					request, _, shutdown := q.GetWithPriority()
					if shutdown {
						return
					}
					if request.Namespace == wakeNamespace {
						handedWake <- request
					}
					q.Done(request)
					q.Add(request) // comes back, as a requeue would
					processed.Add(1)
				}
			}()
		}
		for i := range items {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}})
		}
		// Shut down at a different moment of each round.
		for processed.Load() < int64(round%50) {
			runtime.Gosched()
		}
		stopped := make(chan struct{})
		go func() {
			q.ShutDown()
			wg.Wait()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the workers did not stop within 10 s of the shutdown", round)
		}
		select {
		case request := <-handedWake:
			t.Fatalf("round %d: a worker was handed %v", round, request)
		default:
		}
	}
}
