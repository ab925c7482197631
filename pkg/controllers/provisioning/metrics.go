package provisioning

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const metricsNamespace = "karpenter"

// Launch error reasons, the values of karpenter_launch_errors_total's reason label, beside the
// cloudprovider.Reason* of the causes only the user can fix (failures.go).
const (
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonLimitExceeded        = "LimitExceeded"
	ReasonCloudError           = "CloudError"
	ReasonNodeNotRegistered    = "NodeNotRegistered"
)

// Allocator metrics, on the controller's /metrics endpoint.
var (
	podsPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "pods_pending",
		Help: "Pods waiting for capacity at the last pass, by the provisioner whose new or launching node they were planned onto; provisioner=\"\" for those none can take.",
	}, []string{"provisioner"})
	schedulingDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: "provisioner", Name: "scheduling_duration_seconds",
		Help:    "Duration of planning one batch: reading the cluster, listing instance types and scheduling, launches excluded.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	})
	batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: "provisioner", Name: "batch_size",
		Help:    "Pods that became provisionable within one batch window.",
		Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500},
	})
	// Upstream Karpenter's name and labels (nodepool, zone): the nodepool label holds the
	// Provisioner's name, so that upstream's dashboards group by it.
	nodesCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "nodes_created_total",
		Help: "Nodes launched, by Provisioner (the nodepool label), instance type, zone and capacity type.",
	}, []string{"nodepool", "instance_type", "zone", "capacity_type"})
	launchErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "launch_errors_total",
		Help: "Launches that did not produce a node, by reason: InsufficientCapacity, LimitExceeded, CloudError, NodeNotRegistered, or the cause only the user can fix (InvalidInstanceProfile, InvalidLaunchTemplate, InvalidSubnet, InvalidSecurityGroup, InvalidAMI, Unauthorized, VCPUQuotaExceeded).",
	}, []string{"reason"})
)

func init() {
	crmetrics.Registry.MustRegister(podsPending, schedulingDuration, batchSize, nodesCreated, launchErrors)
}
