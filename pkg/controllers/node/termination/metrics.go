package termination

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/metrics"
)

// Upstream Karpenter's families, counted when the finalizer is released; nodepool holds the
// Provisioner's name for the nodes Provisioners launched.
var (
	terminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "terminated_total",
		Help: "Nodes terminated by Karpenter, by nodepool (the Provisioner's name) and zone.",
	}, []string{metrics.NodePoolLabel, metrics.ZoneLabel})
	lifetimeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "lifetime_duration_seconds",
		Help:    "How long the nodes Karpenter terminated existed, from creation to the finalizer's release, by nodepool.",
		Buckets: []float64{15 * 60, 30 * 60, 45 * 60, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600, 24 * 3600, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400},
	}, []string{metrics.NodePoolLabel})
)

func init() {
	crmetrics.Registry.MustRegister(terminatedTotal, lifetimeDuration)
}
