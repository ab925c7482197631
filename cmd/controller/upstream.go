package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap/zapcore"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/featuregates"
	"karpenter.sh/karpenter/pkg/flagenv"
)

// upstreamAliases are upstream Karpenter's environment variables whose flag is named otherwise
// here; every other variable of upstream's that has a meaning here has the same name.
var upstreamAliases = []flagenv.Alias{
	{Variable: "DISABLE_LEADER_ELECTION", Flag: "leader-elect", Value: negate},
	{Variable: "METRICS_PORT", Flag: "metrics-bind-address", Value: portAddress},
	{Variable: "HEALTH_PROBE_PORT", Flag: "health-probe-bind-address", Value: portAddress},
	{Variable: "ENABLE_PROFILING", Flag: "profiling"},
}

// upstreamIgnored are upstream Karpenter's environment variables that have no meaning here: set
// to anything but their inert value, each is reported at start-up.
var upstreamIgnored = []flagenv.Ignored{
	{Variable: "PREFERENCE_POLICY", Inert: "Respect", Why: "preferences are always respected, as kube-scheduler does"},
	{Variable: "EKS_CONTROL_PLANE", Inert: "false", Why: "the endpoint and CA are the controller's own or --cluster-endpoint and --cluster-ca-bundle; eks:DescribeCluster is read only for the service CIDR"},
	{Variable: "ENABLE_ZONAL_SHIFT", Inert: "false", Why: "zonal shifts are not followed"},
	{Variable: "IGNORE_DRA_REQUESTS", Inert: "true", Why: "pods' resource claims are always left to kube-scheduler"},
	{Variable: "DISABLE_CLUSTER_STATE_OBSERVABILITY", Inert: "false", Why: "the cluster-state metrics cannot be turned off"},
	{Variable: "DISABLE_DRY_RUN", Inert: "false", Why: "EC2NodeClasses are not dry-run: the nodeclass controller resolves them against the cloud and says what fails in their conditions"},
	{Variable: "AMI_REFRESH_INTERVAL", Inert: "1m", Why: "the AMI is cached for an hour"},
	{Variable: "SUBNET_REFRESH_INTERVAL", Inert: "1m", Why: "subnets are cached for a minute"},
	{Variable: "AWS_FEATURE_GATES", Inert: "NodeClassCEL=false", Why: "the EC2NodeClass CRD validates with CEL always"},
	{Variable: "LEADER_ELECTION_NAME", Inert: "karpenter-leader-election", Why: "the lease is always karpenter-leader-election"},
	{Variable: "DISABLE_CONTROLLER_WARMUP", Why: "caches fill once a replica leads"},
	{Variable: "KARPENTER_SERVICE", Why: "the admission webhook is its own Deployment, with its own --service-name"},
	{Variable: "WEBHOOK_PORT", Why: "the admission webhook is its own Deployment, with its own --port"},
	{Variable: "WEBHOOK_METRICS_PORT", Why: "the admission webhook is its own Deployment"},
	{Variable: "DISABLE_WEBHOOK", Why: "the admission webhook is its own Deployment: scale it to zero instead"},
	{Variable: "KUBERNETES_MIN_VERSION", Why: "the Kubernetes versions supported are in docs/getting-started.md"},
	{Variable: "CPU_REQUESTS", Why: "the Go runtime's default GOMAXPROCS (the CPUs the process sees) applies; set GOMAXPROCS to bound it"},
	{Variable: "MEMORY_LIMIT", Why: "GOMEMLIMIT (set by the manifests from the container's memory limit) is read instead"},
}

func negate(value string) (string, error) {
	b, err := strconv.ParseBool(value)
	return strconv.FormatBool(!b), err
}

func portAddress(value string) (string, error) {
	port, err := strconv.Atoi(value)
	if err != nil || port < 0 || port > 65535 {
		return "", fmt.Errorf("not a port: %q", value)
	}
	return ":" + value, nil
}

// applyUpstreamSettings turns the flags of upstream's settings into the options they set.
func (f *flags) applyUpstreamSettings(warn func(string)) error {
	gates, err := featuregates.Parse(f.featureGates)
	if err != nil {
		return err
	}
	f.operator.Controllers.ConsolidationNoSpotToSpot = !gates.SpotToSpot
	f.operator.Controllers.NodeOverlay = gates.NodeOverlay
	if f.operator.Controllers.MinValuesPolicy, err = scheduling.ParseMinValuesPolicy(f.minValuesPolicy); err != nil {
		return err
	}
	for _, warning := range gates.Warnings() {
		warn(warning)
	}
	if f.clusterCABundle != "" {
		if f.operator.ClusterCABundle, err = base64.StdEncoding.DecodeString(f.clusterCABundle); err != nil {
			return fmt.Errorf("--cluster-ca-bundle must be base64-encoded PEM, %w", err)
		}
	}
	if o := f.operator.AWSInstanceOptions; o.VMMemoryOverhead <= 0 || o.VMMemoryOverhead >= 1 || o.ReservedENIs < 0 {
		return fmt.Errorf("--vm-memory-overhead-percent must be within (0, 1) and --reserved-enis not negative, not %g and %d", o.VMMemoryOverhead, o.ReservedENIs)
	}
	return nil
}

// openLogPaths opens upstream's log output paths: stdout, stderr or files (appended to).
func openLogPaths(paths string) (zapcore.WriteSyncer, error) {
	var writers []zapcore.WriteSyncer
	for _, path := range strings.Split(paths, ",") {
		switch path = strings.TrimSpace(path); path {
		case "":
		case "stdout":
			writers = append(writers, zapcore.Lock(os.Stdout))
		case "stderr":
			writers = append(writers, zapcore.Lock(os.Stderr))
		default:
			file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) //nolint:gosec // G304: a log path the operator chose.
			if err != nil {
				return nil, fmt.Errorf("opening the log output %s, %w", path, err)
			}
			writers = append(writers, zapcore.AddSync(file))
		}
	}
	if len(writers) == 0 {
		return zapcore.AddSync(io.Discard), fmt.Errorf("no log output among %q", paths)
	}
	return zapcore.NewMultiWriteSyncer(writers...), nil
}
