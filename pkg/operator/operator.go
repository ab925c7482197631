// Package operator builds Karpenter's controller-runtime manager: the scheme, the cache, the
// field indexes, leader election, probes, the one clock, the cloud providers and every
// controller of pkg/controllers. The controller binary and the tests start it the same way.
package operator

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// LeaderElectionID names the lease replicas compete for.
const LeaderElectionID = "karpenter-leader-election"

// Options configure the operator.
type Options struct {
	// MetricsBindAddress serves /metrics; "0" disables it.
	MetricsBindAddress string
	// Profiling serves Go's profiles (net/http/pprof) under /debug/pprof/ on the metrics
	// server. Off by default: a heap or CPU profile is for measuring, and the metrics port is
	// reachable by whoever scrapes it.
	Profiling bool
	// HealthProbeBindAddress serves /healthz and /readyz; "0" disables it.
	HealthProbeBindAddress string
	// LeaderElection makes only one replica reconcile at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease; the pod's namespace when empty.
	LeaderElectionNamespace string
	// AWSRegion is the region of AWS ids that name none; the SDK's when empty. Unused when
	// Controllers.CloudProvider is set.
	AWSRegion string
	// AWSCallTimeout bounds each AWS call, its retries included; aws.DefaultCallTimeout when
	// zero. Unused when Controllers.CloudProvider is set.
	AWSCallTimeout time.Duration
	// ClusterName, when set, makes the operator launch instances for Provisioners on AWS in
	// the default region (Controllers.InstanceProvider), tagged as the cluster's, and resolve
	// EC2NodeClasses there (Controllers.AWSClients). Unused when Controllers.CloudProvider is
	// set.
	ClusterName string
	// ClusterEndpoint is the API server's URL nodes join; the rest config's host when empty.
	ClusterEndpoint string
	// ClusterCABundle (PEM) is the CA nodes verify the API server with; the rest config's when
	// empty.
	ClusterCABundle []byte
	// AWSInstanceOptions configure the instances launched: the default instance profile, the
	// refresh periods, how long an offering without capacity is not offered. The cluster's
	// name, endpoint, CA bundle and version are filled in from the above and the cluster.
	AWSInstanceOptions aws.InstancesOptions
	// InterruptionQueue names the SQS queue (name, URL or ARN) of the EC2 interruption events
	// the interruption controller acts on; empty disables it. Unused when
	// Controllers.InterruptionQueue is set.
	InterruptionQueue string
	// Namespaces, when set, limits the cache to these namespaces.
	Namespaces []string
	// WedgedReconcileTimeout is how long one reconcile may run before /healthz fails;
	// DefaultWedgedReconcileTimeout when zero.
	WedgedReconcileTimeout time.Duration
	// KubeClientQPS and KubeClientBurst limit the controller's requests to the API server per
	// second, and how many may go at once above that rate; a negative QPS disables the limit,
	// zero keeps the rest config's.
	KubeClientQPS   float32
	KubeClientBurst int
	// SkipNameValidation lets one process build controllers of the same name more than once,
	// as tests that start a manager per test do.
	SkipNameValidation bool
	// Controllers configure the reconcilers. Their Clock is the operator's one clock, the real
	// one when nil; their CloudProvider, when nil, is a registry of every cloud (AWS, through
	// the SDK's configuration chain).
	Controllers controllers.Options
}

// fieldIndexes let a cache-backed client select by a field, as the API server does; each is
// registered once, for every controller that selects by it.
var fieldIndexes = []func(context.Context, client.FieldIndexer) error{
	pods.IndexNodeName,
	pods.IndexNominatedNodeName,
	nodes.IndexProvisioner,
	nodeclaims.Index,
}

// Run runs the operator against the cluster of the kubeconfig until ctx is done.
func Run(ctx context.Context, options Options) error {
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig, %w", err)
	}
	mgr, err := New(ctx, restConfig, options)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager, %w", err)
	}
	return nil
}

// New builds the manager with every field index, probe and controller; Start runs it.
func New(ctx context.Context, restConfig *rest.Config, options Options) (manager.Manager, error) {
	restConfig = rest.CopyConfig(restConfig)
	if options.KubeClientQPS != 0 {
		restConfig.QPS = options.KubeClientQPS
	}
	if options.KubeClientBurst != 0 {
		restConfig.Burst = options.KubeClientBurst
	}
	restConfig.Wrap(func(next http.RoundTripper) http.RoundTripper { return countedRequests{next: next} })
	if options.Controllers.Clock == nil {
		options.Controllers.Clock = clock.RealClock{}
	}
	needQueue := options.InterruptionQueue != "" && options.Controllers.InterruptionQueue == nil
	if options.Controllers.CloudProvider == nil || needQueue {
		// The SDK's own configuration chain applies: credentials (IRSA, environment, profile)
		// and endpoint overrides such as AWS_ENDPOINT_URL.
		provider, err := aws.New(ctx, aws.Options{Region: options.AWSRegion, Clock: options.Controllers.Clock, CallTimeout: options.AWSCallTimeout})
		if err != nil {
			return nil, err
		}
		if options.Controllers.CloudProvider == nil {
			registry := cloudprovider.NewRegistry()
			provider.Register(registry)
			options.Controllers.CloudProvider = registry
			if options.ClusterName != "" {
				version, err := kubernetesVersion(restConfig)
				if err != nil {
					return nil, err
				}
				instances, err := awsInstances(restConfig, provider, version, options)
				if err != nil {
					return nil, err
				}
				registry.RegisterProvider(instances)
				options.Controllers.InstanceProvider = instances
				options.Controllers.InstanceProviderName = "aws"
				// EC2NodeClasses resolve in the region instances launch in, for this cluster.
				options.Controllers.AWSClients = provider.DefaultRegionClients
				options.Controllers.AWSRegion = provider.Region()
				options.Controllers.ClusterName = options.ClusterName
				options.Controllers.KubernetesVersion = version
			}
		}
		if needQueue {
			if options.Controllers.InterruptionQueue, err = provider.InterruptionQueue(options.InterruptionQueue); err != nil {
				return nil, fmt.Errorf("building the interruption queue, %w", err)
			}
		}
	}
	mgr, err := ctrl.NewManager(restConfig, managerOptions(options))
	if err != nil {
		return nil, fmt.Errorf("creating manager, %w", err)
	}
	// The instance types and prices are read in the background from the start, never while
	// scheduling.
	if runnable, ok := options.Controllers.InstanceProvider.(manager.Runnable); ok {
		if err := mgr.Add(runnable); err != nil {
			return nil, fmt.Errorf("adding the instance types refresh, %w", err)
		}
	}
	for _, index := range fieldIndexes {
		if err := index(ctx, mgr.GetFieldIndexer()); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check, %w", err)
	}
	if err := mgr.AddHealthzCheck("reconcilers", wedgedReconcilers(crmetrics.Registry, cmp.Or(options.WedgedReconcileTimeout, DefaultWedgedReconcileTimeout))); err != nil {
		return nil, fmt.Errorf("adding the wedged reconciler check, %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding ready check, %w", err)
	}
	// Last, so that no later failure leaves the controllers' Event broadcasters running: the
	// manager returned stops them when its Start returns.
	stopEvents, err := controllers.Register(ctx, mgr, options.Controllers)
	if err != nil {
		return nil, err
	}
	return stoppingEvents{Manager: mgr, stopEvents: stopEvents}, nil
}

// stoppingEvents is the manager, which stops the controllers' Event broadcasters once it has
// stopped every runnable (as it stops its own recorder last), so no Event of a controller
// draining its work is refused.
type stoppingEvents struct {
	manager.Manager
	stopEvents func()
}

func (m stoppingEvents) Start(ctx context.Context) error {
	defer m.stopEvents()
	return m.Manager.Start(ctx)
}

// awsInstances builds the AWS InstanceProvider for the cluster the rest config reaches: nodes
// join it at its endpoint with its CA bundle, and run the EKS AMI of its Kubernetes version.
func awsInstances(restConfig *rest.Config, provider *aws.Provider, kubernetesVersion string, options Options) (*aws.Instances, error) {
	opts := options.AWSInstanceOptions
	opts.ClusterName = options.ClusterName
	opts.KubernetesVersion = kubernetesVersion
	opts.ClusterEndpoint = cmp.Or(options.ClusterEndpoint, restConfig.Host)
	opts.ClusterCABundle = restConfig.CAData
	if len(options.ClusterCABundle) > 0 {
		opts.ClusterCABundle = options.ClusterCABundle
	}
	if len(opts.ClusterCABundle) == 0 && restConfig.CAFile != "" {
		ca, err := os.ReadFile(restConfig.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's CA bundle, %w", err)
		}
		opts.ClusterCABundle = ca
	}
	if clk, ok := options.Controllers.Clock.(clock.WithTicker); ok {
		opts.Clock = clk
	}
	return provider.Instances(opts)
}

// kubernetesVersion is the major.minor version of the cluster the rest config reaches.
func kubernetesVersion(restConfig *rest.Config) (string, error) {
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return "", fmt.Errorf("creating the discovery client, %w", err)
	}
	version, err := discoveryClient.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the cluster's Kubernetes version, %w", err)
	}
	return minorVersion(version)
}

// minorVersion is the cluster's major.minor version; managed clusters add a suffix to the minor
// version (EKS reports "29+").
func minorVersion(version *apimachineryversion.Info) (string, error) {
	parsed, err := utilversion.ParseGeneric(version.GitVersion)
	if err != nil {
		return "", fmt.Errorf("parsing the cluster's Kubernetes version %q, %w", version.GitVersion, err)
	}
	return fmt.Sprintf("%d.%d", parsed.Major(), parsed.Minor()), nil
}

func managerOptions(options Options) ctrl.Options {
	// Every pod and node of the cluster is cached: they keep only what the controllers read
	// (see docs/benchmarks.md for what that saves); no kind's managed fields are ever read.
	cacheOptions := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:  {Transform: pods.TrimForCache},
			&corev1.Node{}: {Transform: nodes.TrimForCache},
		},
	}
	if len(options.Namespaces) > 0 {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{}
		for _, namespace := range options.Namespaces {
			cacheOptions.DefaultNamespaces[namespace] = cache.Config{}
		}
	}
	managerOptions := ctrl.Options{
		Scheme:                  apis.NewScheme(),
		Metrics:                 metricsserver.Options{BindAddress: options.MetricsBindAddress, ExtraHandlers: profilingHandlers(options.Profiling)},
		HealthProbeBindAddress:  options.HealthProbeBindAddress,
		Cache:                   cacheOptions,
		LeaderElection:          options.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: options.LeaderElectionNamespace,
		// Release the lease on shutdown so a new leader takes over without waiting it out.
		LeaderElectionReleaseOnCancel: true,
	}
	if options.SkipNameValidation {
		managerOptions.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	}
	return managerOptions
}

// profilingHandlers serve net/http/pprof's profiles when enabled, none otherwise.
func profilingHandlers(enabled bool) map[string]http.Handler {
	if !enabled {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}
