package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// InterruptionQueue is an in-memory interruption queue. A received message stays in the
// queue, invisible, until it is deleted or the test makes it visible again (Redeliver), as
// SQS does once its visibility timeout runs out.
type InterruptionQueue struct {
	mu       sync.Mutex
	messages []*queued
	next     int
	arrived  chan struct{} // closed and replaced whenever a message becomes visible
	err      error
	deleted  []string
}

type queued struct {
	message  cloudprovider.InterruptionMessage
	received bool
}

var _ cloudprovider.InterruptionQueue = (*InterruptionQueue)(nil)

func NewInterruptionQueue() *InterruptionQueue {
	return &InterruptionQueue{arrived: make(chan struct{})}
}

// Send enqueues a message and returns its id; the queue assigns ID and ReceiptHandle.
func (q *InterruptionQueue) Send(message cloudprovider.InterruptionMessage) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next++
	message.ID = fmt.Sprintf("message-%d", q.next)
	message.ReceiptHandle = message.ID
	q.messages = append(q.messages, &queued{message: message})
	q.notify()
	return message.ID
}

// notify wakes the receivers waiting; q.mu is held.
func (q *InterruptionQueue) notify() {
	close(q.arrived)
	q.arrived = make(chan struct{})
}

// Receive returns up to ten visible messages, waiting for one until ctx is done (a long
// poll without a time limit: the test decides when messages arrive).
func (q *InterruptionQueue) Receive(ctx context.Context) ([]cloudprovider.InterruptionMessage, error) {
	for {
		q.mu.Lock()
		if q.err != nil {
			err := q.err
			q.mu.Unlock()
			return nil, err
		}
		var out []cloudprovider.InterruptionMessage
		for _, m := range q.messages {
			if !m.received && len(out) < 10 {
				m.received = true
				out = append(out, m.message)
			}
		}
		arrived := q.arrived
		q.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-arrived:
		}
	}
}

func (q *InterruptionQueue) Delete(_ context.Context, message cloudprovider.InterruptionMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	i := slices.IndexFunc(q.messages, func(m *queued) bool { return m.received && m.message.ReceiptHandle == message.ReceiptHandle })
	if i < 0 {
		return fmt.Errorf("deleting message %s, no message was received with receipt handle %q", message.ID, message.ReceiptHandle)
	}
	q.messages = slices.Delete(q.messages, i, i+1)
	q.deleted = append(q.deleted, message.ID)
	return nil
}

// Redeliver makes every received message that was not deleted visible again.
func (q *InterruptionQueue) Redeliver() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.messages {
		m.received = false
	}
	q.notify()
}

// Len is how many messages were sent and not deleted, received or not.
func (q *InterruptionQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.messages)
}

// Deleted returns the ids of the deleted messages, in order.
func (q *InterruptionQueue) Deleted() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.deleted)
}

// SetError makes Receive and Delete fail with err; nil clears it.
func (q *InterruptionQueue) SetError(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.err = err
	q.notify()
}
