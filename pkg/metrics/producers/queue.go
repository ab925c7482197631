package producers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

var (
	// QueueLength is the approximate number of messages available in a queue.
	QueueLength = newGauge("queue", "length", "Approximate number of messages available for retrieval.")
	// QueueOldestMessageAgeSeconds is the approximate age of a queue's oldest message.
	QueueOldestMessageAgeSeconds = newGauge("queue", "oldest_message_age_seconds",
		"Approximate age of the oldest message in the queue, in seconds.")
)

// QueueProducer reports a queue's length and the age of its oldest message.
type QueueProducer struct {
	clouds cloudprovider.Factory

	mu sync.Mutex
	// queues keeps each producer's resolved queue, so implementations can cache what they
	// looked up (an SQS queue URL resolved from its ARN) across computations.
	queues map[types.NamespacedName]resolvedQueue
}

type resolvedQueue struct {
	spec  v1alpha1.QueueSpec
	queue cloudprovider.Queue
}

// NewQueueProducer resolves queues through clouds, which may be nil when no cloud is
// configured.
func NewQueueProducer(clouds cloudprovider.Factory) *QueueProducer {
	return &QueueProducer{clouds: clouds, queues: map[types.NamespacedName]resolvedQueue{}}
}

func (p *QueueProducer) Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Output[*v1alpha1.QueueStatus], error) {
	spec := *mp.Spec.Queue
	queue, err := p.queue(client.ObjectKeyFromObject(mp), spec)
	if err != nil {
		return Output[*v1alpha1.QueueStatus]{}, failure(ReasonQueueUnreadable, "resolving %s %s, %w", spec.Type, spec.ID, err)
	}
	length, err := queue.Length(ctx)
	if err != nil {
		return Output[*v1alpha1.QueueStatus]{}, failure(ReasonQueueUnreadable, "reading the length of %s, %w", spec.ID, err)
	}
	result := Output[*v1alpha1.QueueStatus]{
		Samples: []Sample{{Gauge: QueueLength, Value: float64(length)}},
		Status:  &v1alpha1.QueueStatus{Length: length},
	}
	age, err := queue.OldestMessageAge(ctx)
	switch {
	case errors.Is(err, cloudprovider.ErrNoData) && length == 0:
		// An idle queue stops publishing the datapoint; with no message there is no age.
		age = 0
	case errors.Is(err, cloudprovider.ErrNoData):
		// Messages but no datapoint yet (metrics lag behind a new queue): the age is
		// unknown, so it is not exported rather than exported as zero.
		return result, nil
	case err != nil:
		// The length is good and is what most policies scale on: export it, and leave the
		// age out of the gauges and the status rather than drop both or keep an old age.
		result.Partial = failure(ReasonOldestMessageAgeUnavailable,
			"the length of %s was read; its oldest message age is unavailable, %s", spec.ID, err)
		return result, nil
	}
	seconds := int64(math.Round(age.Seconds()))
	result.Status.OldestMessageAgeSeconds = &seconds
	result.Samples = append(result.Samples, Sample{Gauge: QueueOldestMessageAgeSeconds, Value: age.Seconds()})
	return result, nil
}

func (p *QueueProducer) queue(key types.NamespacedName, spec v1alpha1.QueueSpec) (cloudprovider.Queue, error) {
	if p.clouds == nil {
		return nil, fmt.Errorf("the controller has no cloud provider configured")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if resolved, ok := p.queues[key]; ok && resolved.spec == spec {
		return resolved.queue, nil
	}
	q, err := p.clouds.QueueFor(string(spec.Type), spec.ID)
	if err != nil {
		return nil, err
	}
	p.queues[key] = resolvedQueue{spec: spec, queue: q}
	return q, nil
}

// Forget drops what was resolved for a deleted MetricsProducer.
func (p *QueueProducer) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.queues, key)
}
