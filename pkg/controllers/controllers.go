// Package controllers is the one place that lists every reconciler the controller binary runs.
package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/controllers/interruption"
	"karpenter.sh/karpenter/pkg/controllers/metricsproducer"
	"karpenter.sh/karpenter/pkg/controllers/node/emptiness"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/node/garbagecollection"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	nodeclaimdisruption "karpenter.sh/karpenter/pkg/controllers/nodeclaim/disruption"
	nodeclaimexpiration "karpenter.sh/karpenter/pkg/controllers/nodeclaim/expiration"
	nodeclaimhydration "karpenter.sh/karpenter/pkg/controllers/nodeclaim/hydration"
	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	nodeclaimtermination "karpenter.sh/karpenter/pkg/controllers/nodeclaim/termination"
	"karpenter.sh/karpenter/pkg/controllers/nodeclass"
	"karpenter.sh/karpenter/pkg/controllers/nodeoverlay"
	nodepoolstatus "karpenter.sh/karpenter/pkg/controllers/nodepool/status"
	provisionerstatus "karpenter.sh/karpenter/pkg/controllers/provisioner/status"
	provisionerwarnings "karpenter.sh/karpenter/pkg/controllers/provisioner/warnings"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
	"karpenter.sh/karpenter/pkg/controllers/statemetrics"
	pkgdisruption "karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics/clients"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/state"
)

// Options are the settings reconcilers take from the controller's flags.
type Options struct {
	// PrometheusURI is the base URL of the Prometheus HTTP API HorizontalAutoscalers query.
	PrometheusURI string
	// PrometheusBearerTokenFile, when set, is sent as a bearer token, re-read on every query.
	PrometheusBearerTokenFile string
	// PrometheusCAFile is a PEM bundle verifying Prometheus instead of the system roots.
	PrometheusCAFile string
	// PrometheusInsecureSkipVerify disables verification of Prometheus's certificate.
	PrometheusInsecureSkipVerify bool
	// PrometheusSigV4 signs queries for Amazon Managed Service for Prometheus with the default
	// AWS credential chain, in PrometheusSigV4Region (or the SDK's default region when empty).
	PrometheusSigV4       bool
	PrometheusSigV4Region string
	// PrometheusTimeout bounds each query; clients.DefaultQueryTimeout when zero.
	PrometheusTimeout time.Duration
	// PrometheusMaxResponseBytes caps each query's response; clients.DefaultMaxResponseBytes
	// when zero.
	PrometheusMaxResponseBytes int64
	// HorizontalAutoscalerPeriod is how often each HorizontalAutoscaler is evaluated;
	// ResyncPeriod when zero.
	HorizontalAutoscalerPeriod time.Duration
	// HorizontalAutoscalerTolerance is the fraction around a metric's target within which
	// replicas do not change, within [0, 1); the flag defaults to 0.1.
	HorizontalAutoscalerTolerance float64
	// HorizontalAutoscalerWorkers is how many HorizontalAutoscalers are evaluated at once;
	// horizontalautoscaler.DefaultWorkers when zero.
	HorizontalAutoscalerWorkers int
	// HorizontalAutoscalerMaxRetryDelay caps the backoff after an error; one minute when zero.
	HorizontalAutoscalerMaxRetryDelay time.Duration
	// MetricsProducerPeriod is how often each MetricsProducer is recomputed without a watch
	// event; ResyncPeriod when zero.
	MetricsProducerPeriod time.Duration
	// CloudProvider resolves node groups and queues from a spec's type and id.
	CloudProvider cloudprovider.Factory
	// InstanceProvider launches and terminates the instances of Provisioners; nil when the
	// operator was not given a cluster name, and then the controllers that need it are not
	// registered.
	InstanceProvider cloudprovider.InstanceProvider
	// InstanceProviderName is the cloud's name (aws), the provider label of the cloud calls'
	// metrics.
	InstanceProviderName string
	// InterruptionQueue delivers the cloud's notices about instances; the interruption
	// controller is not registered when nil.
	InterruptionQueue cloudprovider.InterruptionQueue
	// NodeReadyTimeout is how long a launched node may take to become Ready before it is
	// deleted; readiness.DefaultTimeout when zero.
	NodeReadyTimeout time.Duration
	// GarbageCollectionPeriod is how often instances and nodes are compared;
	// garbagecollection.DefaultPeriod when zero.
	GarbageCollectionPeriod time.Duration
	// GarbageCollectionGrace is how long an instance may run without a node before it is
	// terminated; garbagecollection.DefaultGrace when zero.
	GarbageCollectionGrace time.Duration
	// BatchIdleDuration and BatchMaxDuration close a batch of pending pods: once none
	// arrived for the first, or the second after the batch opened; the provisioning
	// package's defaults when zero.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// BatchEarlyLaunch launches, while a burst holds a batch open, the nodes its pods have
	// filled every idle duration, instead of waiting for the batch to close.
	BatchEarlyLaunch bool
	// BatchPackerBudget is how long the batch packer may take in a provisioning pass; zero
	// plans without it.
	BatchPackerBudget time.Duration
	// BindPods has the allocator bind the pods it planned onto the nodes it launches, as
	// Karpenter v0.5 did, instead of nominating them for kube-scheduler to bind.
	BindPods bool
	// ExpirationPeriod is how often expired nodes are looked for; expiration.DefaultPeriod
	// when zero.
	ExpirationPeriod time.Duration
	// ConsolidationPeriod is how often a consolidation pass runs; consolidation.DefaultPeriod
	// when zero.
	ConsolidationPeriod time.Duration
	// ConsolidationThreshold is the fraction of the nodes' price a consolidation must save;
	// pkg/disruption's DefaultSavingsThreshold when zero.
	ConsolidationThreshold float64
	// ConsolidationMinNodeAge is how long a node exists before it may be consolidated;
	// consolidation.DefaultMinNodeAge when zero.
	ConsolidationMinNodeAge time.Duration
	// ConsolidationNoSpotToSpot keeps spot nodes from being replaced by cheaper spot nodes.
	ConsolidationNoSpotToSpot bool
	// SpotToSpotMinTypes is how many cheaper spot instance types a spot node's replacement
	// needs; pkg/disruption's DefaultSpotToSpotMinTypes when zero.
	SpotToSpotMinTypes int
	// DisruptionPeriod is how often a pass of the NodePools' disruption runs;
	// disruption.DefaultPeriod when zero.
	DisruptionPeriod time.Duration
	// DisruptionValidationDelay is how long a node stays a disruption method's candidate before
	// it is acted on; disruption.DefaultValidationDelay when zero. Tests shorten it.
	DisruptionValidationDelay time.Duration
	// NodeOverlay is upstream's alpha feature gate: the planners apply the NodeOverlays to
	// the instance types they plan with, and the nodeoverlay controller, registered only
	// then, writes the overlays' status.
	NodeOverlay bool
	// MinValuesPolicy is what a new node of a NodePool does whose pods leave it fewer values
	// of a key than the NodePool's minValues; MinValuesStrict when empty.
	MinValuesPolicy scheduling.MinValuesPolicy
	// AWSClients are the AWS clients of the region nodes launch in, AWSRegion; the nodeclass
	// controller, which resolves EC2NodeClasses through them, is not registered when nil.
	AWSClients awsapi.ClientsFunc
	AWSRegion  string
	// ClusterName names the cluster in what Karpenter creates in AWS for EC2NodeClasses
	// (instance profiles).
	ClusterName string
	// KubernetesVersion is the cluster's major.minor; it selects the AMIs EC2NodeClass aliases
	// name.
	KubernetesVersion string
	// NodeClassPeriod is how often each EC2NodeClass is resolved again;
	// nodeclass.DefaultPeriod when zero.
	NodeClassPeriod time.Duration
	// ResyncPeriod is how often every object is reconciled even without a watch event.
	ResyncPeriod time.Duration
	// Clock is the one clock of every controller.
	Clock clock.Clock
	// Enabled names the controllers to run, every one when empty; tests run a few alone.
	Enabled []string
}

// Names lists every controller, in the order they are registered.
var Names = []string{horizontalautoscaler.Name, scalablenodegroup.Name, metricsproducer.Name,
	provisioning.Name, nodeclaimlifecycle.Name, nodeclaimtermination.Name, nodeclaimhydration.Name, readiness.Name, termination.Name, garbagecollection.Name,
	interruption.Name, provisionerstatus.Name, provisionerwarnings.Name, nodeclass.Name, nodepoolstatus.Name, nodeoverlay.Name, emptiness.Name, nodeclaimdisruption.Name, nodeclaimexpiration.Name, disruption.Name, statemetrics.Name}

// needInstances are the controllers that run only with an InstanceProvider: without one no
// node is launched for them to look after, and a metrics-only deployment watches no pods.
var needInstances = []string{provisioning.Name, nodeclaimtermination.Name, termination.Name, garbagecollection.Name, interruption.Name,
	nodeclaimdisruption.Name, nodeclaimexpiration.Name, disruption.Name, nodeoverlay.Name}

// enabled is whether the options run the controller of that name: every one when none is named.
func enabled(opts Options, name string) bool {
	return len(opts.Enabled) == 0 || slices.Contains(opts.Enabled, name)
}

// reconciler is what each controller package offers to the manager.
type reconciler interface {
	// Name identifies the controller in logs and errors.
	Name() string
	// SetupWithManager registers the controller's watches with the manager.
	SetupWithManager(mgr manager.Manager) error
}

// Register builds the enabled controllers and adds them to the manager. The manager's field
// indexes must be registered already (pkg/operator does). It returns the function that stops the
// controllers' Event broadcasters (eventRecorders), for the caller to call once the manager has
// stopped.
func Register(ctx context.Context, mgr manager.Manager, opts Options) (stopEvents func(), err error) {
	recorders := &eventRecorders{mgr: mgr}
	if err := register(ctx, mgr, opts, recorders); err != nil {
		recorders.Stop()
		return nil, err
	}
	return recorders.Stop, nil
}

func register(ctx context.Context, mgr manager.Manager, opts Options, recorders *eventRecorders) error {
	for _, name := range opts.Enabled {
		if !slices.Contains(Names, name) {
			return fmt.Errorf("no controller is named %q; the controllers are %v", name, Names)
		}
	}
	if opts.Clock == nil {
		return fmt.Errorf("registering controllers without a clock")
	}
	if opts.InterruptionQueue != nil && opts.InstanceProvider == nil && enabled(opts, interruption.Name) {
		// A queue configured and never read would drop every notice without a word.
		return fmt.Errorf("the %s controller has a queue but no instance provider, whose nodes it acts on", interruption.Name)
	}
	// One ledger: launches of every controller count against the same limits. One launcher:
	// every launch goes through it, within one bound on the cloud's calls.
	ledger := provisioning.NewLedger()
	launches := sync.OnceValue(func() *launcher.Launcher {
		// The launcher's cloud calls are timed and counted under the controller whose context
		// made them (cloudmetrics.WithController); "launcher" only names calls of none.
		instances := cloudmetrics.Decorate(opts.InstanceProvider, "launcher", opts.InstanceProviderName, opts.Clock)
		return launcher.New(mgr.GetClient(), mgr.GetAPIReader(), instances, provisioning.DefaultLaunchConcurrency)
	})
	// One cluster state, read by every planning loop; its informers start only with a loop that
	// plans, so a metrics-only deployment watches no pods or volumes.
	cluster := sync.OnceValues(func() (*state.Cluster, error) {
		return state.NewCluster(ctx, mgr.GetCache(), mgr.GetClient(), opts.NodeOverlay)
	})
	for _, name := range Names {
		if !enabled(opts, name) {
			continue
		}
		if name == nodeoverlay.Name && !opts.NodeOverlay {
			if slices.Contains(opts.Enabled, name) {
				return fmt.Errorf("the %s controller runs only with the NodeOverlay feature gate", name)
			}
			continue
		}
		if opts.InstanceProvider == nil && slices.Contains(needInstances, name) {
			if slices.Contains(opts.Enabled, name) {
				return fmt.Errorf("the %s controller needs an instance provider", name)
			}
			log.FromContext(ctx).Info("no instance provider: controller not registered, Provisioners are not acted on", "controller", name)
			continue
		}
		if opts.AWSClients == nil && name == nodeclass.Name {
			if slices.Contains(opts.Enabled, name) {
				return fmt.Errorf("the %s controller needs AWS clients", name)
			}
			log.FromContext(ctx).Info("no AWS clients: controller not registered, EC2NodeClasses are not resolved", "controller", name)
			continue
		}
		if opts.InterruptionQueue == nil && name == interruption.Name {
			if slices.Contains(opts.Enabled, name) {
				return fmt.Errorf("the %s controller needs an interruption queue", name)
			}
			continue
		}
		r, err := build(ctx, mgr, name, opts, shared{ledger: ledger, launches: launches, cluster: cluster, recorders: recorders})
		if err != nil {
			return fmt.Errorf("building the %s controller, %w", name, err)
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller, %w", name, err)
		}
	}
	return nil
}

// shared is what the controllers that launch share: one ledger of limits, one launcher, one
// cluster state.
type shared struct {
	ledger    *provisioning.Ledger
	launches  func() *launcher.Launcher
	cluster   func() (*state.Cluster, error)
	recorders *eventRecorders
}

// build constructs one controller with everything it needs.
func build(ctx context.Context, mgr manager.Manager, name string, opts Options, with shared) (reconciler, error) {
	if opts.InstanceProvider != nil {
		// Each controller's cloud calls are timed and counted under its name.
		opts.InstanceProvider = cloudmetrics.Decorate(opts.InstanceProvider, name, opts.InstanceProviderName, opts.Clock)
	}
	switch name {
	case horizontalautoscaler.Name:
		prometheus, err := clients.NewPrometheus(ctx, prometheusOptions(opts))
		if err != nil {
			return nil, fmt.Errorf("creating the Prometheus client, %w", err)
		}
		return horizontalautoscaler.New(horizontalautoscaler.Options{
			Client:        mgr.GetClient(),
			Config:        mgr.GetConfig(),
			Mapper:        mgr.GetRESTMapper(),
			Metrics:       clients.NewSharedQueries(prometheus),
			Recorder:      with.recorders.For(name),
			Clock:         opts.Clock,
			Period:        cmp.Or(opts.HorizontalAutoscalerPeriod, opts.ResyncPeriod),
			Tolerance:     &opts.HorizontalAutoscalerTolerance,
			MaxRetryDelay: opts.HorizontalAutoscalerMaxRetryDelay,
			Workers:       opts.HorizontalAutoscalerWorkers,
		})
	case scalablenodegroup.Name:
		return scalablenodegroup.New(scalablenodegroup.Options{
			Client:        mgr.GetClient(),
			CloudProvider: opts.CloudProvider,
			Recorder:      with.recorders.For(name),
			Period:        opts.ResyncPeriod,
		})
	case metricsproducer.Name:
		return metricsproducer.New(metricsproducer.Options{
			Client:   mgr.GetClient(),
			Kinds:    producers.NewKinds(mgr.GetClient(), opts.CloudProvider, opts.Clock),
			Recorder: with.recorders.For(name),
			Clock:    opts.Clock,
			Period:   cmp.Or(opts.MetricsProducerPeriod, opts.ResyncPeriod),
		})
	case provisioning.Name:
		cluster, err := with.cluster()
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's state, %w", err)
		}
		return provisioning.New(provisioning.Options{
			Client:            mgr.GetClient(),
			Reader:            mgr.GetAPIReader(),
			InstanceProvider:  opts.InstanceProvider,
			Recorder:          with.recorders.For(name),
			Clock:             opts.Clock,
			BatchIdleDuration: opts.BatchIdleDuration,
			BatchMaxDuration:  opts.BatchMaxDuration,
			EarlyLaunch:       opts.BatchEarlyLaunch,
			BindPods:          opts.BindPods,
			BindSettle:        provisioning.DefaultBindSettle,
			MinValuesPolicy:   opts.MinValuesPolicy,
			PackBudget:        opts.BatchPackerBudget,
			Ledger:            with.ledger,
			Launcher:          with.launches(),
			Cluster:           cluster,
		})
	case nodeclaimlifecycle.Name:
		return nodeclaimlifecycle.New(nodeclaimlifecycle.Options{
			Client:   mgr.GetClient(),
			Reader:   mgr.GetAPIReader(),
			Recorder: with.recorders.For(name),
			Clock:    opts.Clock,
			Timeouts: nodeclaimlifecycle.Timeouts{Initialization: cmp.Or(opts.NodeReadyTimeout, readiness.DefaultTimeout)},
			Launches: launchesIfInstances(opts, with.launches),
		})
	case nodeclaimdisruption.Name:
		return nodeclaimdisruption.New(nodeclaimdisruption.Options{Client: mgr.GetClient(), Clock: opts.Clock, Instances: opts.InstanceProvider})
	case nodeclaimexpiration.Name:
		return nodeclaimexpiration.New(nodeclaimexpiration.Options{Client: mgr.GetClient(), Recorder: with.recorders.For(name), Clock: opts.Clock})
	case disruption.Name:
		cluster, err := with.cluster()
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's state, %w", err)
		}
		methods, err := provisionerMethods(mgr, opts, with)
		if err != nil {
			return nil, err
		}
		return disruption.New(disruption.Options{
			Provisioners:           methods,
			Client:                 mgr.GetClient(),
			Instances:              opts.InstanceProvider,
			Recorder:               with.recorders.For(name),
			Clock:                  opts.Clock,
			Period:                 opts.DisruptionPeriod,
			ValidationDelay:        opts.DisruptionValidationDelay,
			MinValuesPolicy:        opts.MinValuesPolicy,
			Ledger:                 with.ledger,
			Launcher:               with.launches(),
			Cluster:                cluster,
			ConsolidationThreshold: opts.ConsolidationThreshold,
			Consolidation: pkgdisruption.ConsolidationSettings{MinSpotTypes: opts.SpotToSpotMinTypes, NoSpotToSpot: opts.ConsolidationNoSpotToSpot,
				Pack: provisioning.Packer(opts.BatchPackerBudget, opts.Clock)},
		})
	case nodeclaimhydration.Name:
		return nodeclaimhydration.New(nodeclaimhydration.Options{Client: mgr.GetClient(), Recorder: with.recorders.For(name)})
	case nodeclaimtermination.Name:
		return nodeclaimtermination.New(nodeclaimtermination.Options{
			Client:    mgr.GetClient(),
			Instances: opts.InstanceProvider,
			Recorder:  with.recorders.For(name),
			Clock:     opts.Clock,
			Launches:  with.launches(),
		})
	case readiness.Name:
		return readiness.New(readiness.Options{
			Client:   mgr.GetClient(),
			Recorder: with.recorders.For(name),
			Clock:    opts.Clock,
			Timeout:  opts.NodeReadyTimeout,
		})
	case termination.Name:
		return termination.New(termination.Options{
			Client:    mgr.GetClient(),
			Instances: opts.InstanceProvider,
			Recorder:  with.recorders.For(name),
			Clock:     opts.Clock,
		})
	case statemetrics.Name:
		return statemetrics.New(statemetrics.Options{Client: mgr.GetClient(), Clock: opts.Clock})
	case garbagecollection.Name:
		return garbagecollection.New(garbagecollection.Options{
			Client:    mgr.GetClient(),
			Instances: opts.InstanceProvider,
			Recorder:  with.recorders.For(name),
			Clock:     opts.Clock,
			Period:    opts.GarbageCollectionPeriod,
			Grace:     opts.GarbageCollectionGrace,
		})
	case emptiness.Name:
		return emptiness.New(emptiness.Options{Client: mgr.GetClient(), Recorder: with.recorders.For(name), Clock: opts.Clock})
	case interruption.Name:
		return interruption.New(interruption.Options{
			Client:    mgr.GetClient(),
			Reader:    mgr.GetAPIReader(),
			Queue:     opts.InterruptionQueue,
			Instances: opts.InstanceProvider,
			Recorder:  with.recorders.For(name),
			Clock:     opts.Clock,
			Grace:     opts.GarbageCollectionGrace,
			// The disruption controller replaces what the interruption controller records.
			ReplaceFirst: enabled(opts, disruption.Name),
		})
	case nodeclass.Name:
		return nodeclass.New(nodeclass.Options{
			Client:            mgr.GetClient(),
			Recorder:          with.recorders.For(name),
			Clock:             opts.Clock,
			Clients:           opts.AWSClients,
			ClusterName:       opts.ClusterName,
			Region:            opts.AWSRegion,
			KubernetesVersion: opts.KubernetesVersion,
			Period:            opts.NodeClassPeriod,
		})
	case nodeoverlay.Name:
		return nodeoverlay.New(nodeoverlay.Options{Client: mgr.GetClient(), InstanceTypes: opts.InstanceProvider, Recorder: with.recorders.For(name), Clock: opts.Clock})
	case nodepoolstatus.Name:
		return nodepoolstatus.New(nodepoolstatus.Options{Client: mgr.GetClient(), Recorder: with.recorders.For(name)})
	case provisionerstatus.Name:
		return provisionerstatus.New(provisionerstatus.Options{Client: mgr.GetClient()})
	case provisionerwarnings.Name:
		return provisionerwarnings.New(provisionerwarnings.Options{Client: mgr.GetClient(), Recorder: with.recorders.For(name)})
	}
	return nil, fmt.Errorf("no controller is named %q", name)
}

// launchesIfInstances is the launcher when the operator launches instances, nil otherwise.
func launchesIfInstances(opts Options, launches func() *launcher.Launcher) nodeclaimlifecycle.Launches {
	if opts.InstanceProvider == nil {
		return nil
	}
	return launches()
}

func prometheusOptions(opts Options) clients.PrometheusOptions {
	p := clients.PrometheusOptions{
		URI:                opts.PrometheusURI,
		BearerTokenFile:    opts.PrometheusBearerTokenFile,
		CAFile:             opts.PrometheusCAFile,
		InsecureSkipVerify: opts.PrometheusInsecureSkipVerify,
		Timeout:            opts.PrometheusTimeout,
		MaxResponseBytes:   opts.PrometheusMaxResponseBytes,
	}
	if opts.PrometheusSigV4 {
		p.SigV4 = &clients.SigV4Options{Region: opts.PrometheusSigV4Region}
	}
	return p
}

// provisionerMethods are v1alpha5 Provisioners' emptiness, expiry and consolidation, run in that
// order by the disruption controller's pass after the NodePools' methods.
func provisionerMethods(mgr manager.Manager, opts Options, with shared) ([]disruption.ProvisionerMethod, error) {
	empty, err := emptiness.NewMethod(emptiness.Options{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Recorder: with.recorders.For(emptiness.Name),
		Clock:    opts.Clock,
	})
	if err != nil {
		return nil, err
	}
	expiry, err := expiration.New(expiration.Options{
		Client:    mgr.GetClient(),
		Instances: opts.InstanceProvider,
		Recorder:  with.recorders.For(expiration.Name),
		Clock:     opts.Clock,
		Period:    opts.ExpirationPeriod,
		Ledger:    with.ledger,
		Launcher:  with.launches(),
	})
	if err != nil {
		return nil, err
	}
	consolidate, err := consolidation.New(consolidation.Options{
		Client:    mgr.GetClient(),
		Instances: opts.InstanceProvider,
		Recorder:  with.recorders.For(consolidation.Name),
		Clock:     opts.Clock,
		Period:    opts.ConsolidationPeriod,
		Ledger:    with.ledger,
		Launcher:  with.launches(),
		Settings: consolidation.Settings{
			MinNodeAge:   opts.ConsolidationMinNodeAge,
			Threshold:    opts.ConsolidationThreshold,
			NoSpotToSpot: opts.ConsolidationNoSpotToSpot,
			MinSpotTypes: opts.SpotToSpotMinTypes,
			Pack:         provisioning.Packer(opts.BatchPackerBudget, opts.Clock),
		},
	})
	if err != nil {
		return nil, err
	}
	return []disruption.ProvisionerMethod{empty, expiry, consolidate}, nil
}
