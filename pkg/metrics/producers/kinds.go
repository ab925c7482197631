package producers

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// kinds is every kind of MetricsProducer, in the order of the spec's fields. A new kind is a
// file with its Producer and gauges, and an entry here.
var kinds = []kind{
	{
		field:             "pendingCapacity",
		inSpec:            func(spec *v1alpha1.MetricsProducerSpec) bool { return spec.PendingCapacity != nil },
		readsNodesAndPods: true,
		gauges:            []*prometheus.GaugeVec{PendingCapacityNodes},
		typed: typed[*v1alpha1.PendingCapacityStatus]{
			build: func(in inputs) Producer[*v1alpha1.PendingCapacityStatus] {
				return &PendingCapacityProducer{Reader: in.reader, Cache: in.capacity}
			},
			status: func(s *v1alpha1.MetricsProducerStatus) **v1alpha1.PendingCapacityStatus { return &s.PendingCapacity },
		},
	},
	{
		field:             "reservedCapacity",
		inSpec:            func(spec *v1alpha1.MetricsProducerSpec) bool { return spec.ReservedCapacity != nil },
		readsNodesAndPods: true,
		gauges:            reservedCapacityGaugeList(),
		typed: typed[map[corev1.ResourceName]string]{
			build: func(in inputs) Producer[map[corev1.ResourceName]string] {
				return &ReservedCapacityProducer{Reader: in.reader, Cache: in.capacity}
			},
			status: func(s *v1alpha1.MetricsProducerStatus) *map[corev1.ResourceName]string { return &s.ReservedCapacity },
		},
	},
	{
		field:  "queue",
		inSpec: func(spec *v1alpha1.MetricsProducerSpec) bool { return spec.Queue != nil },
		gauges: []*prometheus.GaugeVec{QueueLength, QueueOldestMessageAgeSeconds},
		typed: typed[*v1alpha1.QueueStatus]{
			build:  func(in inputs) Producer[*v1alpha1.QueueStatus] { return NewQueueProducer(in.clouds) },
			status: func(s *v1alpha1.MetricsProducerStatus) **v1alpha1.QueueStatus { return &s.Queue },
		},
	},
	{
		field:  "scheduleSpec",
		inSpec: func(spec *v1alpha1.MetricsProducerSpec) bool { return spec.ScheduleSpec != nil },
		gauges: []*prometheus.GaugeVec{ScheduledReplicasValue},
		typed: typed[*v1alpha1.ScheduledCapacityStatus]{
			build: func(in inputs) Producer[*v1alpha1.ScheduledCapacityStatus] {
				return &ScheduleProducer{Clock: in.clock}
			},
			status: func(s *v1alpha1.MetricsProducerStatus) **v1alpha1.ScheduledCapacityStatus {
				return &s.ScheduledCapacity
			},
		},
	},
}

// kind is one kind of MetricsProducer.
type kind struct {
	// field is the spec field that selects the kind, as the API spells it.
	field  string
	inSpec func(*v1alpha1.MetricsProducerSpec) bool
	// readsNodesAndPods is whether the kind's value follows nodes and pods, so that their
	// changes must recompute it.
	readsNodesAndPods bool
	// gauges are all the gauges the kind's producer may set.
	gauges []*prometheus.GaugeVec
	// typed is the kind's producer and status field, a typed[S] of its status type S.
	typed interface {
		newProducer(inputs) untypedProducer
		clearStatus(*v1alpha1.MetricsProducerStatus)
	}
}

// inputs are what producers read.
type inputs struct {
	reader   client.Reader
	capacity *CapacityCache
	clouds   cloudprovider.Factory
	clock    clock.PassiveClock
}

// typed ties a kind's producer to its field of the status, both of the kind's status type S,
// so that the table can hold kinds of different status types.
type typed[S any] struct {
	build  func(inputs) Producer[S]
	status func(*v1alpha1.MetricsProducerStatus) *S
}

func (t typed[S]) newProducer(in inputs) untypedProducer {
	return built[S]{producer: t.build(in), status: t.status}
}

func (t typed[S]) clearStatus(status *v1alpha1.MetricsProducerStatus) {
	var none S
	*t.status(status) = none
}

// untypedProducer is a kind's Producer with its status type hidden behind the Result.
type untypedProducer interface {
	produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Result, error)
	forget(key types.NamespacedName)
}

// built is a kind's producer, with the status field its output goes to.
type built[S any] struct {
	producer Producer[S]
	status   func(*v1alpha1.MetricsProducerStatus) *S
}

func (b built[S]) produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Result, error) {
	out, err := b.producer.Produce(ctx, mp)
	if err != nil {
		return Result{}, err
	}
	return Result{
		Samples:     out.Samples,
		NextChange:  out.NextChange,
		Partial:     out.Partial,
		writeStatus: func(status *v1alpha1.MetricsProducerStatus) { *b.status(status) = out.Status },
	}, nil
}

// forget drops what a producer keeps across computations, for those that keep something.
func (b built[S]) forget(key types.NamespacedName) {
	if f, ok := b.producer.(interface{ Forget(types.NamespacedName) }); ok {
		f.Forget(key)
	}
}

// Result is the successful computation of a MetricsProducer of any kind.
type Result struct {
	Samples []Sample
	// NextChange, when not zero, is when the value is known to change next without any
	// other event, so the caller can recompute right then.
	NextChange time.Time
	// Partial, when set, is the part of the signal that could not be computed.
	Partial *Error
	// writeStatus sets the computed kind's field of a status.
	writeStatus func(*v1alpha1.MetricsProducerStatus)
}

// WriteStatus records the result in status: it sets the computed kind's field and clears
// every other kind's, so that a producer whose kind changed keeps nothing of the old kind.
// Conditions are left as they are.
func (r Result) WriteStatus(status *v1alpha1.MetricsProducerStatus) {
	if r.writeStatus == nil {
		// The zero Result of a failed computation: the previous status stands.
		return
	}
	for _, k := range kinds {
		k.typed.clearStatus(status)
	}
	r.writeStatus(status)
}

// Kinds computes MetricsProducers of every kind.
type Kinds struct {
	// producers holds the producer of each entry of kinds, at the same index.
	producers []untypedProducer
	capacity  *CapacityCache
}

// NewKinds builds the producers. reader lists nodes and pods; for pods it must support the
// field selector pods.NodeNameField (the API server does, a cache needs pods.IndexNodeName).
// clouds resolves queues; when nil, queue producers fail with a condition saying so. The
// capacity producers share a CapacityCache, which keeps nothing until it is fed the events of
// reader's informers (see CapacityCache).
func NewKinds(reader client.Reader, clouds cloudprovider.Factory, clk clock.PassiveClock) Kinds {
	in := inputs{reader: reader, capacity: &CapacityCache{}, clouds: clouds, clock: clk}
	k := Kinds{capacity: in.capacity}
	for _, kind := range kinds {
		k.producers = append(k.producers, kind.typed.newProducer(in))
	}
	return k
}

// Produce computes mp with the producer of its kind. It only reads mp: the caller writes
// the result, with Export and Result.WriteStatus.
func (k Kinds) Produce(ctx context.Context, mp *v1alpha1.MetricsProducer) (Result, error) {
	i, ok := kindOf(&mp.Spec)
	if !ok {
		fields := make([]string, len(kinds))
		for i, kind := range kinds {
			fields[i] = kind.field
		}
		last := len(fields) - 1
		return Result{}, failure(ReasonUnknownKind, "spec sets none of %s or %s", strings.Join(fields[:last], ", "), fields[last])
	}
	return k.producers[i].produce(ctx, mp)
}

// CapacityCache is the cache the capacity producers share, for the caller to feed the node and
// pod events of the reader's informers.
func (k Kinds) CapacityCache() *CapacityCache { return k.capacity }

// Forget drops whatever the producers keep for a deleted MetricsProducer.
func (k Kinds) Forget(key types.NamespacedName) {
	for _, p := range k.producers {
		p.forget(key)
	}
}

// ReadsNodesAndPods reports whether the producer of spec's kind reads nodes and pods, so
// that a change of theirs can change its value.
func ReadsNodesAndPods(spec *v1alpha1.MetricsProducerSpec) bool {
	i, ok := kindOf(spec)
	return ok && kinds[i].readsNodesAndPods
}

// kindOf is the index in kinds of spec's kind.
func kindOf(spec *v1alpha1.MetricsProducerSpec) (int, bool) {
	for i, kind := range kinds {
		if kind.inSpec(spec) {
			return i, true
		}
	}
	return 0, false
}
