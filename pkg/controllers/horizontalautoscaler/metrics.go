package horizontalautoscaler

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	metricsNamespace = "karpenter"
	metricsSubsystem = "horizontalautoscaler"
)

// Controller metrics, on the controller's /metrics endpoint. Every series but the query
// duration's carries the HorizontalAutoscaler's name and namespace and is deleted with it.
var (
	desiredReplicasGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "desired_replicas",
		Help: "Replicas the HorizontalAutoscaler last decided for its target.",
	}, []string{"name", "namespace"})
	currentReplicasGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "current_replicas",
		Help: "Replicas the HorizontalAutoscaler's target last reported in its scale status.",
	}, []string{"name", "namespace"})
	// One histogram for all: one per object was 14 series each, most of /metrics at 1000
	// autoscalers (docs/benchmarks.md), and a query shared by many has one duration anyway.
	queryDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "query_duration_seconds",
		Help:    "Duration of the HorizontalAutoscalers' metric queries, successful or not, including the wait for a query another one asked.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	})
	errorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "errors_total",
		Help: "Failures of a HorizontalAutoscaler by reason: an unavailable metric or a condition reason of AbleToScale.",
	}, []string{"name", "namespace", "reason"})
)

func init() {
	crmetrics.Registry.MustRegister(desiredReplicasGauge, currentReplicasGauge, queryDuration, errorsTotal)
}

// forgetMetrics removes every series of a deleted HorizontalAutoscaler.
func forgetMetrics(name, namespace string) {
	labels := prometheus.Labels{"name": name, "namespace": namespace}
	desiredReplicasGauge.DeletePartialMatch(labels)
	currentReplicasGauge.DeletePartialMatch(labels)
	errorsTotal.DeletePartialMatch(labels)
}
