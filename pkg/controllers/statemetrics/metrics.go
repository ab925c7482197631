package statemetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/metrics"
)

// Label names of upstream Karpenter's node and pod families.
const (
	labelNodeName     = "node_name"
	labelRegion       = "region"
	labelInstanceType = "instance_type"
	labelArch         = "arch"
	labelOS           = "os"
	labelPhase        = "phase"
	labelManaged      = "managed"
	labelName         = "name"
	labelNamespace    = "namespace"
	labelOwner        = "owner"
	labelNode         = "node"
	labelScheduled    = "scheduled"
	labelReady        = "ready"
)

// nodeLabels are those of every node family: the node, its well-known labels as upstream
// names them (nodepool holding a Provisioner's name), its phase and whether Karpenter launched it.
var nodeLabels = []string{labelNodeName, metrics.NodePoolLabel, metrics.ZoneLabel, labelRegion, labelInstanceType, labelArch, labelOS, metrics.CapacityTypeLabel, labelPhase, labelManaged}

func nodeGauge(name, help string) *gaugeFamily {
	return newGaugeFamily("karpenter_nodes_"+name, help, append(append([]string{}, nodeLabels...), metrics.ResourceTypeLabel))
}

// Upstream Karpenter's families, computed each pass from the cluster's nodes and pods. CPU is in
// cores, every other resource in its unit (bytes, pods).
var (
	allocatable         = nodeGauge("allocatable", "Node allocatable are the resources allocatable by nodes.")
	totalPodRequests    = nodeGauge("total_pod_requests", "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods.")
	totalPodLimits      = nodeGauge("total_pod_limits", "Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.")
	totalDaemonRequests = nodeGauge("total_daemon_requests", "Node total daemon requests are the resources requested by DaemonSet pods bound to nodes.")
	totalDaemonLimits   = nodeGauge("total_daemon_limits", "Node total daemon limits are the resources specified by DaemonSet pod limits.")
	systemOverhead      = nodeGauge("system_overhead", "Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values as its status reports them.")

	podState = newGaugeFamily("karpenter_pods_state",
		"Pod state is the current state of pods, 1 for each pod, labeled by the pod name, namespace, owner, node, nodepool (the Provisioner's name), zone, architecture, capacity type, instance type, pod phase, and pod readiness.",
		[]string{labelName, labelNamespace, labelOwner, labelNode, labelScheduled, metrics.NodePoolLabel, metrics.ZoneLabel, labelArch, metrics.CapacityTypeLabel, labelInstanceType, labelPhase, labelReady, labelManaged})
	startupDuration = prometheus.NewSummary(prometheus.SummaryOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "startup_duration_seconds",
		Help:       "The time from pod creation until the pod is ready, for the pods that became ready while this replica led.",
		Objectives: map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01},
	})
)

// Upstream's NodePool families, for NodePools and Provisioners alike (nodepool holding a
// Provisioner's name), from what their status counts and their spec bounds.
var (
	nodePoolUsage = newGaugeFamily("karpenter_nodepools_usage",
		"The amount of resources that have been provisioned for a nodepool (its status.resources), by nodepool (the Provisioner's name for a Provisioner) and resource type.",
		[]string{metrics.NodePoolLabel, metrics.ResourceTypeLabel})
	nodePoolLimit = newGaugeFamily("karpenter_nodepools_limit",
		"The nodepool limits are the limits specified on the nodepool (spec.limits; a Provisioner's spec.limits.resources), by nodepool and resource type; a nodepool without a limit on a resource has no series for it.",
		[]string{metrics.NodePoolLabel, metrics.ResourceTypeLabel})
)

// stateFamilies are the gauges each pass replaces whole.
var stateFamilies = []*gaugeFamily{allocatable, totalPodRequests, totalPodLimits, totalDaemonRequests, totalDaemonLimits, systemOverhead, podState, nodePoolUsage, nodePoolLimit}

func init() {
	crmetrics.Registry.MustRegister(startupDuration)
	for _, family := range stateFamilies {
		crmetrics.Registry.MustRegister(family)
	}
}
