package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Values of the reason label of karpenter_nodeclaims_created_total (why a NodeClaim was
// created) and karpenter_nodeclaims_disrupted_total (why Karpenter deleted one), as upstream
// names them: a replacement is created for the reason its old node is disrupted for. The
// interruption controller adds the kinds of its messages.
const (
	ReasonProvisioned   = "provisioned"
	ReasonUnderutilized = "underutilized"
	ReasonEmpty         = "empty"
	ReasonExpired       = "expired"
	ReasonDrifted       = "drifted"
)

// Upstream Karpenter's NodeClaim families. Each is counted where the change it counts is
// written, once the API server took the write, so a reconcile that finds the change made
// already counts nothing.
var (
	nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "created_total",
		Help: "NodeClaims Karpenter created, by the reason they were created for (provisioned, or the disruption reason of the nodes a replacement replaces), nodepool (the Provisioner's name for a Provisioner's) and whether their minValues were relaxed.",
	}, []string{ReasonLabel, NodePoolLabel, MinValuesRelaxedLabel})
	nodeClaimsLaunched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "launched_total",
		Help: "NodeClaims that got their instance from the cloud (condition Launched), by nodepool.",
	}, []string{NodePoolLabel})
	nodeClaimsRegistered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "registered_total",
		Help: "NodeClaims whose node registered (condition Registered), by nodepool.",
	}, []string{NodePoolLabel})
	nodeClaimsInitialized = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "initialized_total",
		Help: "NodeClaims whose node became ready for pods (condition Initialized), by nodepool.",
	}, []string{NodePoolLabel})
	nodeClaimsDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "NodeClaims Karpenter deleted to disrupt their nodes, by reason (underutilized, empty, expired, or an interruption's kind), nodepool and capacity type.",
	}, []string{ReasonLabel, NodePoolLabel, CapacityTypeLabel})
	nodeClaimsTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "NodeClaims whose termination finished (their node and instance gone, the finalizer released), by nodepool, capacity type and zone.",
	}, []string{NodePoolLabel, CapacityTypeLabel, ZoneLabel})
	nodeClaimTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "termination_duration_seconds",
		Help:    "How long NodeClaims took to terminate, from their deletion to the finalizer's release (the drain included), by nodepool.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	}, []string{NodePoolLabel})
)

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsCreated, nodeClaimsLaunched, nodeClaimsRegistered, nodeClaimsInitialized,
		nodeClaimsDisrupted, nodeClaimsTerminated, nodeClaimTerminationDuration)
}

// NodeClaimCreated counts a NodeClaim the API server created, for the reason.
func NodeClaimCreated(nc *v1.NodeClaim, reason string) {
	relaxed := nc.Annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey]
	if relaxed == "" {
		relaxed = "false"
	}
	nodeClaimsCreated.WithLabelValues(reason, NodePool(nc), relaxed).Inc()
}

// NodeClaimConditionsWritten counts the lifecycle conditions (Launched, Registered, Initialized)
// that the write of after made True: those not True in before, the NodeClaim as read. It is
// called once the write succeeded, by the writer of the conditions.
func NodeClaimConditionsWritten(before, after *v1.NodeClaim) {
	for conditionType, counter := range map[string]*prometheus.CounterVec{
		v1.ConditionTypeLaunched:    nodeClaimsLaunched,
		v1.ConditionTypeRegistered:  nodeClaimsRegistered,
		v1.ConditionTypeInitialized: nodeClaimsInitialized,
	} {
		if !before.IsTrue(conditionType) && after.IsTrue(conditionType) {
			counter.WithLabelValues(NodePool(after)).Inc()
		}
	}
}

// NodeClaimDisrupted counts a node, or a NodeClaim, that Karpenter deleted for the reason: the
// deletion it asked for was the one that started its termination.
func NodeClaimDisrupted(object metav1.Object, reason string) {
	nodeClaimsDisrupted.WithLabelValues(reason, NodePool(object), CapacityType(object)).Inc()
}

// NodeClaimTerminated counts a NodeClaim whose finalizer was released, took after its deletion.
func NodeClaimTerminated(nc *v1.NodeClaim, took time.Duration) {
	nodeClaimsTerminated.WithLabelValues(NodePool(nc), CapacityType(nc), Zone(nc)).Inc()
	nodeClaimTerminationDuration.WithLabelValues(NodePool(nc)).Observe(took.Seconds())
}
