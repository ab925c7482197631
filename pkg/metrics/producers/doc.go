// Package producers computes the signal of each kind of MetricsProducer and exports it as
// Prometheus gauges on controller-runtime's metrics registry, which the controller serves
// on /metrics.
//
// A Producer reads its inputs (nodes and pods, a cloud queue, the clock) and returns its
// output: the samples to export, its kind's field of the status and when the value next
// changes. It never writes the MetricsProducer: the controller writes the output, with
// Export and Result.WriteStatus. The table kinds names every kind once, with how the spec
// selects it, its producer, its status field, its gauges and whether it reads nodes and
// pods, so a new kind is a file and an entry there.
//
// The arithmetic lives in the pure packages capacity and scheduledcapacity; this package
// adapts API objects to them and performs the reads. Export and Delete keep the registry
// exactly in step with the producers: every series of a MetricsProducer that the last
// computation did not produce is removed, so a stale value never reaches Prometheus.
//
// The capacity producers share a CapacityCache: a nodeSelector's reservation, each node's and
// the unschedulable pods are computed once and kept until a node or pod event of the informers
// says they changed, so that many producers over the same nodes cost one computation per change.
package producers
