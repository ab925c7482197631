package producers

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Labels of every producer gauge: the MetricsProducer's name and namespace.
const (
	LabelName      = "name"
	LabelNamespace = "namespace"
)

// ReservedCapacityGauges are the three gauges of one resource of a reservedCapacity producer.
type ReservedCapacityGauges struct {
	Reserved, Capacity, Utilization *prometheus.GaugeVec
}

var (
	// ReservedCapacity holds the gauges of cpu (cores), memory (bytes) and pods (count).
	ReservedCapacity = map[corev1.ResourceName]ReservedCapacityGauges{
		corev1.ResourceCPU:    reservedCapacityGauges("cpu", "cores"),
		corev1.ResourceMemory: reservedCapacityGauges("memory", "bytes"),
		corev1.ResourcePods:   reservedCapacityGauges("pods", "pods"),
	}
	// PendingCapacityNodes is how many more nodes of a group its pending pods need.
	PendingCapacityNodes = newGauge("pending_capacity", "nodes",
		"Nodes of the group that pending pods fitting its node shape need, by first-fit-decreasing packing.")
	// QueueLength is the approximate number of messages available in a queue.
	QueueLength = newGauge("queue", "length", "Approximate number of messages available for retrieval.")
	// QueueOldestMessageAgeSeconds is the approximate age of a queue's oldest message.
	QueueOldestMessageAgeSeconds = newGauge("queue", "oldest_message_age_seconds",
		"Approximate age of the oldest message in the queue, in seconds.")
	// ScheduledReplicasValue is the replica count a schedule gives now.
	ScheduledReplicasValue = newGauge("scheduled_replicas", "value", "Replica count the schedule gives now.")
)

// gauges lists every gauge a producer may set, so that Export and Delete reach them all.
var gauges = func() []*prometheus.GaugeVec {
	all := []*prometheus.GaugeVec{PendingCapacityNodes, QueueLength, QueueOldestMessageAgeSeconds, ScheduledReplicasValue}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		g := ReservedCapacity[name]
		all = append(all, g.Reserved, g.Capacity, g.Utilization)
	}
	return all
}()

func init() {
	for _, g := range gauges {
		metrics.Registry.MustRegister(g)
	}
}

func reservedCapacityGauges(resource, unit string) ReservedCapacityGauges {
	return ReservedCapacityGauges{
		Reserved: newGauge("reserved_capacity", resource+"_reserved",
			"Effective requests of the non-terminal pods on the group's Ready, schedulable nodes, in "+unit+"."),
		Capacity: newGauge("reserved_capacity", resource+"_capacity",
			"Allocatable of the group's Ready, schedulable nodes, in "+unit+"."),
		Utilization: newGauge("reserved_capacity", resource+"_utilization",
			"Reserved over capacity, a 0-1 ratio."),
	}
}

func newGauge(subsystem, name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: subsystem, Name: name, Help: help,
	}, []string{LabelName, LabelNamespace})
}

// Sample is one value for one gauge of a MetricsProducer.
type Sample struct {
	Gauge *prometheus.GaugeVec
	Value float64
}

// Export makes the samples the only series of the MetricsProducer key: it sets each and
// removes every other series the producer had, e.g. those of a kind it no longer has.
func Export(key types.NamespacedName, samples []Sample) {
	labels := prometheus.Labels{LabelName: key.Name, LabelNamespace: key.Namespace}
	set := map[*prometheus.GaugeVec]bool{}
	for _, s := range samples {
		s.Gauge.With(labels).Set(s.Value)
		set[s.Gauge] = true
	}
	for _, g := range gauges {
		if !set[g] {
			g.Delete(labels)
		}
	}
}

// Delete removes every series of the MetricsProducer key.
func Delete(key types.NamespacedName) {
	Export(key, nil)
}
