// Package provisioning is the allocator: it gathers the pods kube-scheduler could not place
// into batches, plans nodes for them with the pure scheduler of ./scheduling against a
// snapshot of the cluster (nodes still launching counted as room), launches the plan's nodes
// through the cloud's InstanceProvider within the Provisioners' limits, and creates their
// Node objects at once. kube-scheduler binds the pods once the nodes are Ready, each
// nominated to its planned node; with BindPods the allocator binds them itself (bind.go).
package provisioning

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// Name identifies the controller in logs, errors and Options.Enabled.
const Name = "provisioning"

// DefaultLaunchConcurrency bounds the cloud's launch calls that run at once, of every batch.
const DefaultLaunchConcurrency = 10

// Reasons of the Provisioner's Ready condition when it is False, and of Events.
const (
	ReasonInstanceTypesUnresolved = "InstanceTypesUnresolved"
	ReasonNoInstanceTypes         = "NoInstanceTypes"
	ReasonLimitsExhausted         = "LimitsExhausted"
	// ReasonUnprovisionable is the Warning on a pod no Provisioner can launch a node for.
	ReasonUnprovisionable = "Unprovisionable"
	// ReasonPlanned is the Normal Event on a pod naming the node planned for it.
	ReasonPlanned = "Provisioning"
	// ReasonLaunched is the Normal Event on a Provisioner for each node it launched.
	ReasonLaunched = "Launched"
	// ReasonPricesStale is that of the PricesCurrent condition when it is False.
	ReasonPricesStale = "PricesStale"
)

// Options configure New.
type Options struct {
	// Client reads through the manager's cache and writes Nodes, Events and status.
	Client client.Client
	// Reader reads the API server itself, for what the cache may not show yet: the Client when
	// nil.
	Reader           client.Reader
	InstanceProvider cloudprovider.InstanceProvider
	Recorder         record.EventRecorder
	Clock            clock.Clock
	// BatchIdleDuration and BatchMaxDuration close a batch: after no pod arrived for the
	// first, or the second after it opened. DefaultBatch*Duration when zero.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// EarlyLaunch runs an early pass every idle duration while a burst holds a batch open,
	// launching the nodes its pods have filled (provision).
	EarlyLaunch bool
	// LaunchConcurrency bounds the cloud's launch calls at once, of every batch;
	// DefaultLaunchConcurrency when zero.
	LaunchConcurrency int
	// BindPods binds the pods planned onto the nodes it launches itself, as Karpenter v0.5
	// did, instead of nominating them for kube-scheduler to bind (bind.go).
	BindPods bool
	// BindSettle is how long the allocator waits, once a node it launched registered, before it
	// binds pods to it (see settleBeforeBinding); none when zero. DefaultBindSettle in the
	// controller binary.
	BindSettle time.Duration
	// MinValuesPolicy is what a new node of a NodePool does whose pods leave it fewer values
	// of a key than the NodePool's minValues; MinValuesStrict when empty.
	MinValuesPolicy scheduling.MinValuesPolicy
	// PackBudget is how long the batch packer may take in a pass (scheduling.Packer); a pass
	// plans without it when zero.
	PackBudget time.Duration
	// Ledger counts launches against the Provisioners' limits, shared with the other
	// controllers that launch; a ledger of its own when nil.
	Ledger *Ledger
	// Launcher launches every node, shared with the other controllers that launch; one of its
	// own when nil.
	Launcher *launcher.Launcher
	// Cluster is the cluster state every planning loop reads; the client's, read live, when
	// nil.
	Cluster *state.Cluster
}

// Controller is the allocator. Batches are planned one at a time by its loop, and each
// batch's launches run in the background, so the next batch is planned while they do: the
// ledger keeps limits hard across them, and inFlight keeps a pass from launching again for
// pods a batch is launching for.
type Controller struct {
	client           client.Client
	reader           client.Reader
	cluster          *state.Cluster
	instanceProvider cloudprovider.InstanceProvider
	recorder         record.EventRecorder
	clock            clock.Clock
	batcher          *batcher
	ledger           *Ledger
	window           window
	launchLimit      int
	bindPods         bool
	bindSettle       time.Duration
	minValuesPolicy  scheduling.MinValuesPolicy
	packBudget       time.Duration
	inFlight         *inFlight
	// earlyHold spaces the early passes' launches out (early.go).
	earlyHold earlyHold
	// launcher creates the NodeClaims and launches them; it bounds the cloud's launch calls at
	// once, of every batch in flight and every other caller.
	launcher *launcher.Launcher
	// background counts the batches launching and the retries waiting: run returns once
	// they ended. stopped, set as run returns, keeps a retry asked for by the pod watch from
	// starting as run waits (backgroundMu orders the two).
	background   sync.WaitGroup
	backgroundMu sync.Mutex
	stopped      bool
	// retryDue is whether a retry (retryLater) is waiting.
	retryDue atomic.Bool

	// told is what each pending pod was last told (its planned node or why none), so an
	// Event is emitted once per cause, not once per batch.
	toldMu sync.Mutex
	told   map[types.UID]string
	// nominated is the node each pod waiting for one was last nominated to (nominate.go):
	// written by the loop and by the batches launching in the background.
	nominatedMu sync.Mutex
	nominated   map[types.UID]string
	// binding are the pods a place call is binding (bind.go): no other call places them
	// meanwhile.
	bindingMu sync.Mutex
	binding   sets.Set[types.UID]
	// launchFailures are the Provisioners' launches failing for a reason only their user can
	// fix (failures.go).
	launchFailures *launchFailures
}

// New builds the controller; SetupWithManager starts it.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.InstanceProvider == nil || opts.Recorder == nil || opts.Clock == nil {
		return nil, fmt.Errorf("the provisioning controller needs a client, an instance provider, a recorder and a clock")
	}
	w := window{idle: cmp.Or(opts.BatchIdleDuration, DefaultBatchIdleDuration), max: cmp.Or(opts.BatchMaxDuration, DefaultBatchMaxDuration)}
	if w.idle < 0 || w.max < w.idle {
		return nil, fmt.Errorf("batch windows must be positive with the maximum (%s) at least the idle gap (%s)", w.max, w.idle)
	}
	launchLimit := cmp.Or(opts.LaunchConcurrency, DefaultLaunchConcurrency)
	if opts.Reader == nil {
		opts.Reader = opts.Client
	}
	return &Controller{
		client:           opts.Client,
		reader:           opts.Reader,
		cluster:          cmp.Or(opts.Cluster, state.Live(opts.Client)),
		instanceProvider: opts.InstanceProvider,
		recorder:         opts.Recorder,
		clock:            opts.Clock,
		batcher:          newBatcher(opts.Clock, w, opts.EarlyLaunch),
		ledger:           cmp.Or(opts.Ledger, NewLedger()),
		window:           w,
		launchLimit:      launchLimit,
		bindPods:         opts.BindPods,
		bindSettle:       opts.BindSettle,
		minValuesPolicy:  opts.MinValuesPolicy,
		packBudget:       opts.PackBudget,
		inFlight:         newInFlight(),
		launcher:         cmp.Or(opts.Launcher, launcher.New(opts.Client, opts.Reader, opts.InstanceProvider, launchLimit)),
		told:             map[types.UID]string{},
		nominated:        map[types.UID]string{},
		binding:          sets.New[types.UID](),
		launchFailures:   newLaunchFailures(),
	}, nil
}

func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// A NodePool's NodeClaims block its deletion (ownerReferences[].blockOwnerDeletion), which the
// OwnerReferencesPermissionEnforcement admission plugin allows to who may update its finalizers.
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/finalizers,verbs=update
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager feeds provisionable pods to the batcher, has Provisioners' changes run a
// pass, and runs the loop that plans each batch, on the leader only.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && pods.IsProvisionable(pod)
		}))).
		// Renominations are one status patch each, as many at once as kube-scheduler clears
		// when a node turns Ready.
		WithOptions(controller.Options{MaxConcurrentReconciles: c.launchLimit}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			renominated, err := c.renominate(ctx, req.NamespacedName)
			if renominated {
				// It may have come after kube-scheduler's last attempt (nominate.go).
				c.retryLater(ctx)
			} else {
				c.batcher.add(req.String())
			}
			return reconcile.Result{}, err
		}))
	if err != nil {
		return fmt.Errorf("watching pods, %w", err)
	}
	// A Provisioner created or changed gets its Ready condition from a pass at once, not only
	// when pods are next pending; its own status writes change no generation.
	err = ctrl.NewControllerManagedBy(mgr).
		Named(Name+"-provisioners").
		For(&v1alpha5.Provisioner{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			c.batcher.poke()
			return reconcile.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("watching provisioners, %w", err)
	}
	// Pods waiting for a NodePool whose class just became Ready are planned for at once. A
	// NodePool's status changes with its class's readiness, not its generation.
	err = ctrl.NewControllerManagedBy(mgr).
		Named(Name + "-nodepools").
		For(&v1.NodePool{}).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			c.batcher.poke()
			return reconcile.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("watching nodepools, %w", err)
	}
	// A Node held by the launching taint that no batch in flight will open — a launch resumed
	// after a restart, an instance read back late, a release that failed — is opened by the next
	// pass (releaseLeftovers): its registration runs one, as no pod event may follow.
	err = ctrl.NewControllerManagedBy(mgr).
		Named(Name+"-held-nodes").
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			node, ok := o.(*corev1.Node)
			return ok && node.DeletionTimestamp == nil && slices.ContainsFunc(node.Spec.Taints, isLaunchingTaint)
		}))).
		Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			if !c.inFlight.nodeNames(c.inFlight.capture()).Has(req.Name) {
				c.batcher.poke()
			}
			return reconcile.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("watching held nodes, %w", err)
	}
	// A plain runnable runs only while this replica leads, like the controllers.
	return mgr.Add(manager.RunnableFunc(c.run))
}

// run plans batch after batch until ctx ends, and returns once the launches it started
// ended too. A pass that left pods without a node (a capacity error everywhere, a cloud
// error, no Provisioner able to take them) is retried after the longest batch window, with
// whatever pods are then pending.
func (c *Controller) run(ctx context.Context) error {
	c.backgroundMu.Lock()
	c.stopped = false
	c.backgroundMu.Unlock()
	defer func() {
		c.backgroundMu.Lock()
		c.stopped = true
		c.backgroundMu.Unlock()
		c.background.Wait()
	}()
	ctx = cloudmetrics.WithController(ctx, Name)
	logger := log.FromContext(ctx).WithName(Name)
	c.resumeLaunches(ctx)
	for {
		p, ok := c.batcher.wait(ctx)
		if !ok {
			return nil
		}
		if p.early {
			if _, err := c.provision(ctx, true); err != nil {
				logger.Error(err, "launching the nodes an open batch has filled")
			}
			continue
		}
		batchSize.Observe(float64(p.size))
		if retry, err := c.provision(ctx, false); err != nil || retry {
			if err != nil {
				logger.Error(err, "provisioning a batch")
			}
			c.retryLater(ctx)
		}
	}
}

// resumeTimeout bounds how long the allocator's first pass waits for the launches a stopped
// controller left to be resumed: the cloud's catalogue is read first, in seconds.
const resumeTimeout = time.Minute

// resumeLaunches finishes the launches a stopped controller left before the first pass plans, so
// that the pass counts their room instead of launching for their pods again; it tries again while
// the cloud cannot answer yet (its catalogue not read), for up to resumeTimeout. It returns once
// the cache the pass reads shows what the resumes recorded.
func (c *Controller) resumeLaunches(ctx context.Context) {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, resumeTimeout, true, func(ctx context.Context) (bool, error) {
		last = c.launcher.ResumeAll(ctx)
		return last == nil, nil
	})
	if err != nil {
		log.FromContext(ctx).WithName(Name).Error(errors.Join(last, err), "resuming the launches a stopped controller left; the NodeClaim lifecycle goes on with them")
		return
	}
	var unresumed []string
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, cacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
		unresumed, last = c.launcher.Unresumed(ctx)
		return last == nil && len(unresumed) == 0, nil
	})
	if err != nil {
		log.FromContext(ctx).WithName(Name).Error(errors.Join(last, err), "waiting for the cache to show the resumed launches", "nodeclaims", unresumed)
	}
}

// retryLater runs a pass after the longest batch window, unless ctx ends first. A retry already
// due runs that pass: a pass and the batch it launched both failing for good (a launch only the
// user can fix, pods no Provisioner can take) would otherwise ask for two retries each time, and
// the passes multiply.
func (c *Controller) retryLater(ctx context.Context) {
	c.backgroundMu.Lock()
	defer c.backgroundMu.Unlock()
	if c.stopped || !c.retryDue.CompareAndSwap(false, true) {
		return
	}
	retryAfter := c.clock.NewTimer(c.window.max)
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		defer retryAfter.Stop()
		select {
		case <-retryAfter.C():
			c.retryDue.Store(false)
			c.batcher.poke()
		case <-ctx.Done():
			c.retryDue.Store(false)
		}
	}()
}
