// Package producers computes the signal of each kind of MetricsProducer and exports it as
// Prometheus gauges on controller-runtime's metrics registry, which the controller serves
// on /metrics.
//
// A Producer reads its inputs (nodes and pods, a cloud queue, the clock), writes its kind's
// field of the status and returns the samples to export. The arithmetic lives in the pure
// packages capacity and scheduledcapacity; this package adapts API objects to them and
// performs the reads. Export and Delete keep the registry exactly in step with the
// producers: every series of a MetricsProducer that the last computation did not produce is
// removed, so a stale value never reaches Prometheus.
package producers
