// Command controller runs Karpenter's reconcilers in one controller-runtime manager.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime/debug"
	"time"

	"karpenter.sh/karpenter/pkg/disruption"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/node/garbagecollection"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/flagenv"
	"karpenter.sh/karpenter/pkg/metrics/clients"
	"karpenter.sh/karpenter/pkg/operator"
)

type flags struct {
	logLevel  string
	logFormat string
	// logOutputPaths and logErrorOutputPaths are upstream's LOG_OUTPUT_PATHS and
	// LOG_ERROR_OUTPUT_PATHS: comma-separated stdout, stderr or files.
	logOutputPaths, logErrorOutputPaths string
	// clusterCABundle is base64 PEM, as upstream's CLUSTER_CA_BUNDLE.
	clusterCABundle string
	featureGates    string
	// minValuesPolicy is upstream's MIN_VALUES_POLICY: Strict or BestEffort.
	minValuesPolicy string
	// probe, when set, makes the binary probe these URLs and exit instead of running.
	probe string
	// warnings are said once the logger is set up: settings overridden or without effect.
	warnings []string
	// kubeClientQPS is parsed as a float64, the flag package's, and kept as rest.Config's float32.
	kubeClientQPS float64
	operator      operator.Options
}

// parseFlags reads the command line; a flag not given there takes its value from the
// environment variable named like it (--log-level from LOG_LEVEL), parsed the same way.
func parseFlags(fs *flag.FlagSet, args []string) (flags, error) {
	var f flags
	fs.StringVar(&f.operator.MetricsBindAddress, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint.")
	fs.BoolVar(&f.operator.Profiling, "profiling", false, "Serve Go's heap, CPU and goroutine profiles under /debug/pprof/ on the metrics address.")
	fs.StringVar(&f.operator.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz probes.")
	fs.DurationVar(&f.operator.WedgedReconcileTimeout, "wedged-reconcile-timeout", operator.DefaultWedgedReconcileTimeout, "How long one reconcile may run before /healthz fails and the pod is restarted.")
	fs.BoolVar(&f.operator.LeaderElection, "leader-elect", true, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&f.operator.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to the pod's namespace.")
	fs.StringVar(&f.logLevel, "log-level", "info", "Minimum log level: debug, info, warn or error.")
	fs.StringVar(&f.logFormat, "log-format", "json", "Log encoding: json or console.")
	fs.StringVar(&f.probe, "probe", "", "Instead of running, GET these comma-separated URLs and exit 0 if each answers 2xx (the chart's helm test).")
	fs.StringVar(&f.logOutputPaths, "log-output-paths", "stderr", "Where logs go, comma-separated: stdout, stderr or files.")
	fs.StringVar(&f.logErrorOutputPaths, "log-error-output-paths", "stderr", "Where the logger's own errors go, comma-separated: stdout, stderr or files.")
	fs.StringVar(&f.operator.Controllers.PrometheusURI, "prometheus-uri", "http://prometheus-operated.monitoring:9090", "Base URL of the Prometheus HTTP API.")
	fs.StringVar(&f.operator.AWSRegion, "aws-region", "", "AWS region for node groups and queues whose ID names none; defaults to the SDK's (AWS_REGION, profile).")
	fs.DurationVar(&f.operator.AWSCallTimeout, "aws-call-timeout", aws.DefaultCallTimeout, "Time limit of each AWS call, its retries included.")
	fs.StringVar(&f.operator.ClusterName, "cluster-name", "", "Name of the cluster; when set, Provisioners launch EC2 instances tagged kubernetes.io/cluster/<name>=owned, and EC2NodeClasses are resolved (their instance profiles named and tagged after it).")
	fs.StringVar(&f.operator.ClusterEndpoint, "cluster-endpoint", "", "API server URL new nodes join; defaults to the controller's own kubeconfig host.")
	fs.StringVar(&f.clusterCABundle, "cluster-ca-bundle", "", "Base64 PEM bundle new nodes verify the API server with; defaults to the controller's own kubeconfig CA.")
	fs.StringVar(&f.operator.AWSInstanceOptions.ClusterServiceCIDR, "cluster-service-cidr", "", "The cluster's service CIDR, which new nodes need to join; read from eks:DescribeCluster when empty.")
	fs.StringVar(&f.operator.AWSInstanceOptions.DefaultInstanceProfile, "aws-default-instance-profile", "", "Instance profile of the Provisioners' nodes whose provider block names none.")
	fs.DurationVar(&f.operator.AWSInstanceOptions.InstanceTypesRefresh, "aws-instance-types-refresh", aws.DefaultInstanceTypesRefresh, "How often EC2 instance types and their zones are re-read.")
	fs.DurationVar(&f.operator.AWSInstanceOptions.PricingRefresh, "aws-pricing-refresh", aws.DefaultPricingRefresh, "How often on-demand and spot prices are re-read.")
	fs.DurationVar(&f.operator.AWSInstanceOptions.UnavailableOfferingsTTL, "aws-unavailable-offerings-ttl", aws.DefaultUnavailableOfferingsTTL, "How long an instance type, zone and capacity type EC2 had no capacity for is not offered.")
	fs.BoolVar(&f.operator.AWSInstanceOptions.IncludeBareMetal, "aws-include-bare-metal", false, "Offer bare metal instance types too.")
	fs.Float64Var(&f.operator.AWSInstanceOptions.VMMemoryOverhead, "vm-memory-overhead-percent", aws.DefaultVMMemoryOverhead, "Share of an instance's memory its node does not report (0.075 is 7.5%), within (0, 1).")
	fs.IntVar(&f.operator.AWSInstanceOptions.ReservedENIs, "reserved-enis", 0, "Network interfaces no pod gets an address from (VPC CNI custom networking), left out of max-pods and kube-reserved.")
	fs.BoolVar(&f.operator.AWSInstanceOptions.IsolatedVPC, "isolated-vpc", false, "The cluster reaches no AWS API without a VPC endpoint: the Pricing API is not called, on-demand prices are the built-in ones.")
	fs.StringVar(&f.operator.Controllers.PrometheusBearerTokenFile, "prometheus-bearer-token-file", "", "File holding a bearer token for Prometheus, re-read on every query.")
	fs.StringVar(&f.operator.Controllers.PrometheusCAFile, "prometheus-ca-file", "", "PEM bundle that verifies Prometheus's certificate instead of the system roots.")
	fs.BoolVar(&f.operator.Controllers.PrometheusInsecureSkipVerify, "prometheus-insecure-skip-verify", false, "Do not verify Prometheus's certificate.")
	fs.BoolVar(&f.operator.Controllers.PrometheusSigV4, "prometheus-sigv4", false, "Sign Prometheus queries with SigV4, for Amazon Managed Service for Prometheus.")
	fs.StringVar(&f.operator.Controllers.PrometheusSigV4Region, "prometheus-sigv4-region", "", "Region of the SigV4 signature; defaults to the AWS SDK's region.")
	fs.DurationVar(&f.operator.Controllers.PrometheusTimeout, "prometheus-timeout", clients.DefaultQueryTimeout, "Time limit of each Prometheus query.")
	fs.Int64Var(&f.operator.Controllers.PrometheusMaxResponseBytes, "prometheus-max-response-bytes", clients.DefaultMaxResponseBytes, "Largest Prometheus response read; a larger one fails the query.")
	fs.IntVar(&f.operator.Controllers.HorizontalAutoscalerWorkers, "horizontalautoscaler-workers", horizontalautoscaler.DefaultWorkers, "How many HorizontalAutoscalers are evaluated at once.")
	fs.DurationVar(&f.operator.Controllers.HorizontalAutoscalerPeriod, "horizontalautoscaler-period", 10*time.Second, "How often each HorizontalAutoscaler is evaluated.")
	fs.Float64Var(&f.operator.Controllers.HorizontalAutoscalerTolerance, "horizontalautoscaler-tolerance", 0.1, "Fraction around a metric's target within which replicas do not change.")
	fs.DurationVar(&f.operator.Controllers.MetricsProducerPeriod, "metricsproducer-period", 10*time.Second, "How often each MetricsProducer is recomputed.")
	fs.DurationVar(&f.operator.Controllers.NodeReadyTimeout, "node-ready-timeout", readiness.DefaultTimeout, "How long a launched node may take to become Ready before it is deleted and its instance terminated.")
	fs.DurationVar(&f.operator.Controllers.GarbageCollectionPeriod, "garbage-collection-period", garbagecollection.DefaultPeriod, "How often the cloud's instances and the cluster's nodes are compared.")
	fs.DurationVar(&f.operator.Controllers.GarbageCollectionGrace, "garbage-collection-grace", garbagecollection.DefaultGrace, "How long an instance may run without a node before it is terminated.")
	fs.DurationVar(&f.operator.Controllers.BatchIdleDuration, "batch-idle-duration", provisioning.DefaultBatchIdleDuration, "A batch of pending pods closes once no pod arrived for this long.")
	fs.DurationVar(&f.operator.Controllers.BatchMaxDuration, "batch-max-duration", provisioning.DefaultBatchMaxDuration, "A batch of pending pods closes this long after it opened, however many still arrive.")
	fs.BoolVar(&f.operator.Controllers.BatchEarlyLaunch, "batch-early-launch", false, "While a burst holds a batch open, launch every batch-idle-duration the nodes its pods have already filled.")
	fs.DurationVar(&f.operator.Controllers.BatchPackerBudget, "batch-packer-budget", scheduling.DefaultPackBudget, "How long the batch packer may take in a provisioning pass to choose new nodes' instance types against the whole batch; once it has passed, the nodes it has not weighed keep the one-pod-at-a-time plan's types. 0 plans without it.")
	fs.BoolVar(&f.operator.Controllers.BindPods, "bind-pods", true, "Bind the pods planned onto a launched node to it as soon as the node exists, as Karpenter v0.5 did; false nominates them to it instead, for kube-scheduler to bind once it is Ready.")
	fs.DurationVar(&f.operator.Controllers.ExpirationPeriod, "expiration-period", expiration.DefaultPeriod, "How often, at most, the disruption pass looks for nodes past their Provisioner's ttlSecondsUntilExpired.")
	fs.DurationVar(&f.operator.Controllers.ConsolidationPeriod, "consolidation-period", consolidation.DefaultPeriod, "How often, at most, the disruption pass consolidates Provisioners' nodes: deletes or replaces them.")
	fs.Float64Var(&f.operator.Controllers.ConsolidationThreshold, "consolidation-threshold", disruption.DefaultSavingsThreshold, "Fraction of the nodes' hourly price a consolidation must save, within (0, 1).")
	fs.IntVar(&f.operator.Controllers.SpotToSpotMinTypes, "spot-to-spot-min-types", disruption.DefaultSpotToSpotMinTypes, "How many cheaper spot instance types a spot node's replacement by consolidation needs (with SpotToSpotConsolidation=true); upstream's fixed 15.")
	fs.DurationVar(&f.operator.Controllers.ConsolidationMinNodeAge, "consolidation-min-node-age", consolidation.DefaultMinNodeAge, "How long a node exists before consolidation may delete or replace it.")
	fs.StringVar(&f.featureGates, "feature-gates", "", "Upstream Karpenter's feature gates, Name=true|false comma-separated: SpotToSpotConsolidation=true lets consolidation replace spot nodes by spot (upstream's default false); NodeOverlay=true applies NodeOverlays to the instance types scheduling plans with; the others have no effect here.")
	fs.StringVar(&f.minValuesPolicy, "min-values-policy", string(scheduling.MinValuesStrict), "What a new node of a NodePool does whose pods leave its instance types fewer values of a key than a requirement's minValues: Strict, it is not made so (the pods go to other nodes or stay pending); BestEffort, it launches with the values there are, its NodeClaim annotated karpenter.sh/nodeclaim-min-values-relaxed=true.")
	fs.StringVar(&f.operator.InterruptionQueue, "interruption-queue", "", "SQS queue (name, URL or ARN) the EventBridge rules send EC2 spot interruptions, rebalance recommendations, scheduled changes and state changes to; empty disables interruption handling.")
	fs.Float64Var(&f.kubeClientQPS, "kube-client-qps", defaultKubeClientQPS, "Requests per second the controller may send the API server on average; negative for no client-side limit (the API server's priority and fairness still applies).")
	fs.IntVar(&f.operator.KubeClientBurst, "kube-client-burst", defaultKubeClientBurst, "Requests the controller may send the API server at once above --kube-client-qps.")
	fs.DurationVar(&f.operator.Controllers.ResyncPeriod, "resync-period", 10*time.Second, "How often each object is reconciled without a watch event.")
	warn := func(message string) { f.warnings = append(f.warnings, message) }
	if err := flagenv.Parse(fs, args, flagenv.WithAliases(upstreamAliases...), flagenv.WithIgnored(upstreamIgnored...), flagenv.WarnTo(warn)); err != nil {
		return f, err
	}
	if err := f.applyUpstreamSettings(warn); err != nil {
		return f, err
	}
	if t := f.operator.Controllers.HorizontalAutoscalerTolerance; t < 0 || t >= 1 {
		return f, fmt.Errorf("--horizontalautoscaler-tolerance must be within [0, 1), not %g", t)
	}
	if f.operator.WedgedReconcileTimeout <= 0 {
		return f, fmt.Errorf("--wedged-reconcile-timeout must be positive, not %s", f.operator.WedgedReconcileTimeout)
	}
	if cidr := f.operator.AWSInstanceOptions.ClusterServiceCIDR; cidr != "" {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return f, fmt.Errorf("--cluster-service-cidr must be a CIDR such as 10.100.0.0/16, %w", err)
		}
	}
	if f.operator.AWSCallTimeout <= 0 {
		return f, fmt.Errorf("--aws-call-timeout must be positive, not %s", f.operator.AWSCallTimeout)
	}
	for name, d := range map[string]time.Duration{
		"--aws-instance-types-refresh":    f.operator.AWSInstanceOptions.InstanceTypesRefresh,
		"--aws-pricing-refresh":           f.operator.AWSInstanceOptions.PricingRefresh,
		"--aws-unavailable-offerings-ttl": f.operator.AWSInstanceOptions.UnavailableOfferingsTTL,
	} {
		if d <= 0 {
			return f, fmt.Errorf("%s must be positive, not %s", name, d)
		}
	}
	if f.operator.Controllers.PrometheusTimeout <= 0 {
		return f, fmt.Errorf("--prometheus-timeout must be positive, not %s", f.operator.Controllers.PrometheusTimeout)
	}
	if f.operator.Controllers.PrometheusMaxResponseBytes <= 0 {
		return f, fmt.Errorf("--prometheus-max-response-bytes must be positive, not %d", f.operator.Controllers.PrometheusMaxResponseBytes)
	}
	// One evaluation runs up to MaxMetrics queries in turn; the liveness check must not take
	// an evaluation that is merely waiting out its timeouts for a wedged one.
	if slowest := v1alpha1.MaxMetrics * f.operator.Controllers.PrometheusTimeout; f.operator.WedgedReconcileTimeout <= slowest {
		return f, fmt.Errorf("--wedged-reconcile-timeout (%s) must exceed %d × --prometheus-timeout (%s), the longest an evaluation may legitimately take",
			f.operator.WedgedReconcileTimeout, v1alpha1.MaxMetrics, slowest)
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--node-ready-timeout", f.operator.Controllers.NodeReadyTimeout},
		{"--garbage-collection-period", f.operator.Controllers.GarbageCollectionPeriod},
		{"--garbage-collection-grace", f.operator.Controllers.GarbageCollectionGrace},
		{"--expiration-period", f.operator.Controllers.ExpirationPeriod},
		{"--consolidation-period", f.operator.Controllers.ConsolidationPeriod},
		{"--consolidation-min-node-age", f.operator.Controllers.ConsolidationMinNodeAge},
	} {
		if d.value <= 0 {
			return f, fmt.Errorf("%s must be positive, not %s", d.flag, d.value)
		}
	}
	if t := f.operator.Controllers.ConsolidationThreshold; t <= 0 || t >= 1 {
		return f, fmt.Errorf("--consolidation-threshold must be within (0, 1), not %g", t)
	}
	if n := f.operator.Controllers.SpotToSpotMinTypes; n < 1 {
		return f, fmt.Errorf("--spot-to-spot-min-types must be at least 1, not %d", n)
	}
	if f.operator.Controllers.HorizontalAutoscalerWorkers < 1 {
		return f, fmt.Errorf("--horizontalautoscaler-workers must be at least 1, not %d", f.operator.Controllers.HorizontalAutoscalerWorkers)
	}
	if idle, max := f.operator.Controllers.BatchIdleDuration, f.operator.Controllers.BatchMaxDuration; idle <= 0 || max < idle {
		return f, fmt.Errorf("--batch-idle-duration (%s) must be positive and --batch-max-duration (%s) at least as long", idle, max)
	}
	f.operator.KubeClientQPS = float32(f.kubeClientQPS)
	if f.operator.KubeClientQPS == 0 || f.operator.KubeClientBurst < 1 {
		return f, fmt.Errorf("--kube-client-qps must not be 0 (negative disables the limit) and --kube-client-burst must be at least 1, not %g and %d",
			f.operator.KubeClientQPS, f.operator.KubeClientBurst)
	}
	if f.logFormat != "json" && f.logFormat != "console" {
		return f, fmt.Errorf("--log-format must be json or console, not %q", f.logFormat)
	}
	return f, nil
}

// defaultKubeClientQPS and defaultKubeClientBurst: see docs/benchmarks.md for the figures behind them.
const (
	defaultKubeClientQPS   = -1
	defaultKubeClientBurst = 300
)

// defaultGCPercent is the controller's garbage collection target when GOGC is not set: the heap
// may grow 75 % over what is live between collections instead of Go's 100 %. With 1000
// HorizontalAutoscalers, 1000 MetricsProducers, 5000 pods and 500 nodes that kept the resident
// memory at 141.6 MiB instead of 152.1 for no measurable CPU (0.158 against 0.167 core;
// docs/benchmarks.md). GOMEMLIMIT, which the manifests set to the container's memory limit,
// still makes the collector work harder near that limit.
const defaultGCPercent = 75

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	f, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if f.probe != "" {
		if err := probe(context.Background(), f.probe, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	level, err := zapcore.ParseLevel(f.logLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "--log-level, %v\n", err)
		os.Exit(2)
	}
	output, err := openLogPaths(f.logOutputPaths)
	if err != nil {
		fmt.Fprintf(os.Stderr, "--log-output-paths, %v\n", err)
		os.Exit(2)
	}
	errorOutput, err := openLogPaths(f.logErrorOutputPaths)
	if err != nil {
		fmt.Fprintf(os.Stderr, "--log-error-output-paths, %v\n", err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.Level(level), zap.UseDevMode(false), zap.WriteTo(output), zap.RawZapOpts(uberzap.ErrorOutput(errorOutput)), func(o *zap.Options) {
		if f.logFormat == "console" {
			o.Encoder = zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
				TimeKey: "time", LevelKey: "level", NameKey: "logger", MessageKey: "message",
				EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.CapitalLevelEncoder,
				EncodeDuration: zapcore.StringDurationEncoder, ConsoleSeparator: "  ",
			})
		}
	}))
	log := ctrl.Log.WithName("controller")
	for _, warning := range f.warnings {
		log.Info("warning: "+warning, "settings", "docs/reference/settings.md")
	}

	// The signal handler cancels on SIGTERM/SIGINT so reconciles finish and the lease is released.
	if err := operator.Run(ctrl.SetupSignalHandler(), f.operator); err != nil {
		log.Error(err, "controller stopped")
		os.Exit(1)
	}
}
