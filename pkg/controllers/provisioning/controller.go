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
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/conditions"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/events"
	"karpenter.sh/karpenter/pkg/pods"
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
	Client           client.Client
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
	// Ledger counts launches against the Provisioners' limits, shared with the other
	// controllers that launch; a ledger of its own when nil.
	Ledger *Ledger
}

// Controller is the allocator. Batches are planned one at a time by its loop, and each
// batch's launches run in the background, so the next batch is planned while they do: the
// ledger keeps limits hard across them, and inFlight keeps a pass from launching again for
// pods a batch is launching for.
type Controller struct {
	client           client.Client
	instanceProvider cloudprovider.InstanceProvider
	recorder         record.EventRecorder
	clock            clock.Clock
	batcher          *batcher
	ledger           *Ledger
	window           window
	launchLimit      int
	bindPods         bool
	inFlight         *inFlight
	// cloudCalls bounds the cloud's launch calls at once, of every batch in flight.
	cloudCalls *semaphore.Weighted
	// background counts the batches launching and the retries waiting: run returns once
	// they ended.
	background sync.WaitGroup

	// told is what each pending pod was last told (its planned node or why none), so an
	// Event is emitted once per cause, not once per batch.
	toldMu sync.Mutex
	told   map[types.UID]string
	// nominated is the node each pod waiting for one was last nominated to (nominate.go):
	// written by the loop and by the batches launching in the background.
	nominatedMu sync.Mutex
	nominated   map[types.UID]string
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
	return &Controller{
		client:           opts.Client,
		instanceProvider: opts.InstanceProvider,
		recorder:         opts.Recorder,
		clock:            opts.Clock,
		batcher:          newBatcher(opts.Clock, w, opts.EarlyLaunch),
		ledger:           cmp.Or(opts.Ledger, NewLedger()),
		window:           w,
		launchLimit:      launchLimit,
		bindPods:         opts.BindPods,
		inFlight:         newInFlight(),
		cloudCalls:       semaphore.NewWeighted(int64(launchLimit)),
		told:             map[types.UID]string{},
		nominated:        map[types.UID]string{},
	}, nil
}

func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;patch
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
			if !renominated {
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
	// A plain runnable runs only while this replica leads, like the controllers.
	return mgr.Add(manager.RunnableFunc(c.run))
}

// run plans batch after batch until ctx ends, and returns once the launches it started
// ended too. A pass that left pods without a node (a capacity error everywhere, a cloud
// error, no Provisioner able to take them) is retried after the longest batch window, with
// whatever pods are then pending.
func (c *Controller) run(ctx context.Context) error {
	defer c.background.Wait()
	logger := log.FromContext(ctx).WithName(Name)
	if err := c.adoptOrphans(ctx); err != nil {
		logger.Error(err, "adopting instances launched without a Node")
	}
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

// retryLater runs a pass after the longest batch window, unless ctx ends first.
func (c *Controller) retryLater(ctx context.Context) {
	retryAfter := c.clock.NewTimer(c.window.max)
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		defer retryAfter.Stop()
		select {
		case <-retryAfter.C():
			c.batcher.poke()
		case <-ctx.Done():
		}
	}()
}

// adoptOrphans creates the Node of every instance a Provisioner launched that has none: a
// controller that crashed (or lost its lease) between a launch and the Node's creation left
// it. The instance becomes the room it was launched to be, so its pods, still pending, are
// planned onto it instead of onto a second instance. Creating the Node is idempotent, so a
// Node created meanwhile is fine; an instance whose Provisioner is gone is left to garbage
// collection.
func (c *Controller) adoptOrphans(ctx context.Context) error {
	instances, err := c.instanceProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances, %w", err)
	}
	var errs []error
	for _, instance := range instances {
		name := instance.Labels[v1alpha5.ProvisionerNameLabelKey]
		if name == "" || instance.NodeName == "" {
			continue
		}
		p := &v1alpha5.Provisioner{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("getting provisioner %s, %w", name, err))
			}
			continue
		}
		if err := c.client.Get(ctx, client.ObjectKey{Name: instance.NodeName}, &corev1.Node{}); !apierrors.IsNotFound(err) {
			if err != nil {
				errs = append(errs, fmt.Errorf("getting node %s, %w", instance.NodeName, err))
			}
			continue
		}
		if err := c.client.Create(ctx, NodeFor(instance, p, nil)); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("creating node %s for instance %s, %w", instance.NodeName, instance.ProviderID, err))
		}
	}
	return errors.Join(errs...)
}

// provisionerPlan is a Provisioner as one pass sees it.
type provisionerPlan struct {
	stored, updated *v1alpha5.Provisioner
	instanceTypes   []*cloudprovider.InstanceType
	nodes           map[string]corev1.ResourceList
	// launched is whether the pass started launching a node for it.
	launched bool
}

// provision runs one pass: snapshot, plan, start the launches, report. retry is true when
// pods were left without a node, for a reason that may pass.
//
// An early pass, of a batch a burst still holds open, plans the same way but launches only the
// new nodes the pending pods have filled (scheduling.Filled: none of them fits the room left),
// which no later pod of the burst could make any cheaper, so that the pods kube-scheduler
// marked first do not wait for the last; the rest wait for the batch to close. It tells pods
// nothing and retries nothing: the closing pass does.
func (c *Controller) provision(ctx context.Context, early bool) (retry bool, err error) {
	start := c.clock.Now()
	captured := c.inFlight.capture()
	snapshot, plans, err := c.snapshot(ctx)
	if err != nil {
		return true, err
	}
	shown := sets.New[string]()
	for i := range snapshot.Nodes {
		shown.Insert(snapshot.Nodes[i].Name)
	}
	awaited := awaitedPending(snapshot, c.inFlight.awaited(captured, shown))
	snapshot.Pods = slices.DeleteFunc(snapshot.Pods, func(pod corev1.Pod) bool {
		_, ok := awaited[pod.UID]
		return ok
	})
	if len(captured) > 0 && slices.ContainsFunc(snapshot.pending(), dependsOnDomains) {
		// Where kube-scheduler puts such a pod depends on every node of the batches in
		// flight, which the snapshot does not all show yet: plan once they are in the cache.
		if !awaitBatches(ctx, captured) {
			return false, nil
		}
		return c.provision(ctx, early)
	}
	if err := c.releaseLeftovers(ctx, snapshot, c.inFlight.nodeNames(captured)); err != nil {
		log.FromContext(ctx).WithName(Name).Error(err, "opening nodes a batch left held")
		retry = true
	}
	launching := snapshot.LaunchingNodes()
	renominations := c.renominations(snapshot)
	binds := c.bindable(snapshot)
	var provisioners []scheduling.Provisioner
	for _, name := range sortedNames(plans) {
		p := plans[name]
		// Instance types not read yet (the provider's first refresh) or unreadable: try again,
		// so that the Provisioner becomes Ready without waiting for a pod.
		retry = retry || p.instanceTypes == nil
		if p.instanceTypes != nil {
			// What counts against the limits is the ledger's: the nodes seen and the launches
			// in flight, never a status that may lag.
			provisioners = append(provisioners, Limited(p.updated, p.instanceTypes, c.ledger.Used(name, p.nodes)))
		}
	}
	plan := snapshot.Plan(provisioners)
	results := plan.Results
	if early {
		if results == nil {
			return false, nil
		}
		// A node with a pod that counts domains waits for the close: where kube-scheduler puts
		// the rest of its group turns on every node of the group's plan.
		filled := slices.DeleteFunc(scheduling.Filled(results.NewNodes, plan.Pending), func(n *scheduling.NewNode) bool {
			return slices.ContainsFunc(n.Pods, dependsOnDomains)
		})
		if len(filled) == 0 {
			return false, nil
		}
		log.FromContext(ctx).WithName(Name).Info("launching the nodes an open batch has filled", "pending", len(plan.Pending), "filledNodes", len(filled),
			"newNodes", len(results.NewNodes), "duration", c.clock.Since(start).Round(time.Millisecond))
		c.nominatePlanned(ctx, renominations, results, launching, binds)
		c.startLaunches(ctx, filled, plans, binds)
		return false, c.writeStatus(ctx, plans)
	}
	if len(plan.Pending) > 0 {
		planned := c.clock.Since(start)
		schedulingDuration.Observe(planned.Seconds())
		log.FromContext(ctx).WithName(Name).Info("planned pending pods", "pending", len(plan.Pending), "newNodes", len(results.NewNodes),
			"ontoExistingOrLaunchingNodes", len(results.Bindings), "unschedulable", len(results.Unschedulable), "awaitingLaunches", len(awaited),
			"duration", planned.Round(time.Millisecond))
		bound, placed := c.nominatePlanned(ctx, renominations, results, launching, binds)
		retry = !placed || retry
		retry = c.startLaunches(ctx, results.NewNodes, plans, binds) || retry
		c.tell(launching, plan.Pending, awaited, results, bound)
		// A pod no Provisioner can take now may be taken later without any change to the pod
		// (an offering's capacity returns, a node goes away under a limit): look again.
		retry = retry || len(results.Unschedulable) > 0
		// A pod kube-scheduler found no room for that the plan puts on an open node saw that
		// node before a binding kube-scheduler had already decided reached the cache; no update
		// of the pod may follow (its condition stays as it is), so look again.
		retry = retry || plannedOntoOpenNodes(launching, results)
	}
	c.recordPending(launching, awaited, results)
	c.updateLimitsCondition(plans)
	return retry, c.writeStatus(ctx, plans)
}

// nominatePlanned binds (those binds allows) or nominates the pods the pass counts on launching
// nodes: those nominated again (renominations) and those it planned onto launching room. It
// returns the pods bound, and false when some binding or nomination failed.
func (c *Controller) nominatePlanned(ctx context.Context, renominations []nomination, results *scheduling.Results, launching map[string]string, binds bindable) (map[*corev1.Pod]bool, bool) {
	bound, rest, bindErr := c.place(ctx, append(renominations, plannedOntoNodes(results, launching)...), binds)
	if err := errors.Join(bindErr, c.nominate(ctx, rest)); err != nil {
		log.FromContext(ctx).WithName(Name).Error(err, "placing pods on the nodes planned for them")
		return bound, false
	}
	return bound, true
}

// awaitedPending keeps the awaited pods the snapshot shows pending: one kube-scheduler bound
// meanwhile (to another node with room) takes that node's room, and the pass must see it.
func awaitedPending(snapshot *Snapshot, awaited map[types.UID]string) map[types.UID]string {
	out := map[types.UID]string{}
	for i := range snapshot.Pods {
		pod := &snapshot.Pods[i]
		if provisioner, ok := awaited[pod.UID]; ok && pods.IsProvisionable(pod) {
			out[pod.UID] = provisioner
		}
	}
	return out
}

func sortedNames(plans map[string]*provisionerPlan) []string {
	names := make([]string, 0, len(plans))
	for name := range plans {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// snapshot reads the cluster from the cache and each Provisioner's instance types from the
// cloud, marking the Provisioner not Ready when they cannot be resolved.
func (c *Controller) snapshot(ctx context.Context) (*Snapshot, map[string]*provisionerPlan, error) {
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return nil, nil, fmt.Errorf("listing provisioners, %w", err)
	}
	snapshot, err := ReadSnapshot(ctx, c.client, c.clock.Now())
	if err != nil {
		return nil, nil, err
	}
	plans := map[string]*provisionerPlan{}
	for i := range provisioners.Items {
		stored := &provisioners.Items[i]
		if stored.DeletionTimestamp != nil {
			continue
		}
		p := &provisionerPlan{stored: stored, updated: stored.DeepCopy()}
		plans[stored.Name] = p
		types, reason, err := ResolveInstanceTypes(ctx, c.instanceProvider, stored)
		if err != nil {
			p.updated.StatusConditions().MarkFalse(apis.ConditionReady, reason, "%v", err)
			continue
		}
		if err := c.instanceProvider.StalePrices(); err != nil {
			p.updated.StatusConditions().MarkFalse(v1alpha5.ConditionPricesCurrent, ReasonPricesStale, "%v", err)
		} else {
			p.updated.StatusConditions().MarkTrue(v1alpha5.ConditionPricesCurrent)
		}
		p.instanceTypes = types
		for _, it := range types {
			snapshot.InstanceTypes[it.Name] = it
		}
	}
	for name, p := range plans {
		p.nodes = snapshot.provisionerNodes(name)
	}
	return snapshot, plans, nil
}

// ResolveInstanceTypes are the instance types a Provisioner may launch; when there are none,
// the reason and why, as its Ready condition says them.
func ResolveInstanceTypes(ctx context.Context, lister cloudprovider.InstanceTypeLister, p *v1alpha5.Provisioner) ([]*cloudprovider.InstanceType, string, error) {
	types, err := lister.InstanceTypes(ctx, Constraints(p))
	switch {
	case err != nil:
		return nil, ReasonInstanceTypesUnresolved, fmt.Errorf("resolving instance types, %w", err)
	case len(types) == 0:
		return nil, ReasonNoInstanceTypes, errors.New("no instance type satisfies the requirements")
	}
	return types, "", nil
}

// Constraints are what the cloud needs of a Provisioner to list its instance types.
func Constraints(p *v1alpha5.Provisioner) cloudprovider.Constraints {
	requirements := make([]corev1.NodeSelectorRequirement, 0, len(p.Spec.Requirements))
	for _, r := range p.Spec.Requirements {
		requirements = append(requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
	}
	return cloudprovider.Constraints{Requirements: requirements, Provider: p.Spec.Provider}
}

// startLaunches reserves room under the limits for the plan's new nodes and launches them in
// the background: the next pass is planned while they run, without their pods until their
// Nodes are in the cache (inFlight). It reports whether the limits refused some.
func (c *Controller) startLaunches(ctx context.Context, newNodes []*scheduling.NewNode, plans map[string]*provisionerPlan, binds bindable) (retry bool) {
	batch, launches, retry := c.reserveAll(ctx, newNodes, plans)
	if batch == nil {
		return retry
	}
	hold := held(newNodes)
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		if c.launchBatch(ctx, batch, launches, hold, binds) {
			c.retryLater(ctx)
		}
	}()
	return retry
}

// reserveAll groups the plan's identical new nodes for one cloud call each, reserves room
// under the limits for them, and records them in flight as one batch; nil when the limits
// allow none. It reports whether the limits refused some.
func (c *Controller) reserveAll(ctx context.Context, newNodes []*scheduling.NewNode, plans map[string]*provisionerPlan) (*launchBatch, []*reservedLaunch, bool) {
	retry := false
	var launches []*reservedLaunch
	var planned []*plannedLaunch
	for _, g := range groupLaunches(newNodes, launchGroupSize(len(newNodes), c.launchLimit)) {
		p := plans[g.provisioner]
		r, err := c.reserve(g, p.updated, p.nodes)
		if err != nil {
			retry = true
			log.FromContext(ctx).WithName(Name).Error(err, "reserving room for nodes", "provisioner", g.provisioner, "nodes", len(g.nodes))
		}
		if r != nil {
			p.launched = true
			launches = append(launches, r)
			planned = append(planned, r.planned...)
		}
	}
	if len(launches) == 0 {
		return nil, nil, retry
	}
	return c.inFlight.start(planned), launches, retry
}

// launchBatch runs a batch's launches at once (cloudCalls bounds their calls). The pods binds
// allows are bound to their nodes as each launch's Nodes exist, the rest nominated to theirs,
// and the nodes of a batch of several are opened to kube-scheduler together once all exist
// (see launchingTaint). The batch is in flight until the cache shows its Nodes, and its pods
// bound. It reports whether any launch, binding, nomination or release failed for a reason
// that may pass.
func (c *Controller) launchBatch(ctx context.Context, batch *launchBatch, launches []*reservedLaunch, hold bool, binds bindable) (retry bool) {
	defer c.inFlight.finish(batch)
	var mu sync.Mutex
	var group sync.WaitGroup
	var launched []*corev1.Node
	var nominations []nomination
	for _, r := range launches {
		group.Add(1)
		go func() {
			defer group.Done()
			nodes, err := c.launch(ctx, r, hold)
			if err != nil {
				log.FromContext(ctx).WithName(Name).Error(err, "launching nodes", "provisioner", r.provisioner.Name, "nodes", len(r.group.nodes), "launched", len(nodes))
			}
			var planned []nomination
			for i, node := range nodes {
				if node == nil {
					continue
				}
				for _, pod := range r.group.nodes[i].Pods {
					planned = append(planned, nomination{pod: pod, node: node.Name})
				}
			}
			// Bound at once: a bound pod counts where it is, whatever the hold.
			bound, rest, bindErr := c.place(ctx, planned, binds)
			if bindErr != nil {
				log.FromContext(ctx).WithName(Name).Error(bindErr, "binding pods to the nodes launched for them")
			}
			for i, node := range nodes {
				if node == nil {
					continue
				}
				for _, pod := range r.group.nodes[i].Pods {
					how := ""
					if bound[pod] {
						how = ", and the pod bound to it"
					}
					c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonPlanned, "Node %s (%s, %s) was launched for this pod by provisioner %s%s", node.Name,
						node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelTopologyZone], r.provisioner.Name, how)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			retry = retry || err != nil || bindErr != nil
			for _, node := range nodes {
				if node != nil {
					launched = append(launched, node)
				}
			}
			c.toldMu.Lock()
			for _, n := range planned {
				c.told[n.pod.UID] = n.node
			}
			c.toldMu.Unlock()
			nominations = append(nominations, rest...)
		}()
	}
	group.Wait()
	// Nominated before they are opened, so that no pod takes the room planned for another.
	if err := c.nominate(ctx, nominations); err != nil {
		log.FromContext(ctx).WithName(Name).Error(err, "nominating pods to the nodes launched for them")
		retry = true
	}
	opened := true
	if hold {
		if err := c.release(ctx, launched); err != nil {
			log.FromContext(ctx).WithName(Name).Error(err, "opening the batch's nodes to pods")
			retry, opened = true, false
		}
	}
	if err := c.awaitCached(ctx, launched, opened); err != nil {
		log.FromContext(ctx).WithName(Name).Error(err, "waiting for the batch's nodes in the cache")
		retry = true
	}
	return retry
}

// cacheSyncTimeout bounds how long a pass waits for the cache to show the Nodes it created.
const cacheSyncTimeout = 10 * time.Second

// awaitCached returns once the cache the passes read shows every node created, and opened if
// it was: until then the batch stays in flight, and a pass leaves out the pods of nodes its
// snapshot does not show, rather than planning them onto a second node each.
func (c *Controller) awaitCached(ctx context.Context, created []*corev1.Node, opened bool) error {
	for _, node := range created {
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, cacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
			cached := &corev1.Node{}
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(node), cached); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return !opened || !slices.ContainsFunc(cached.Spec.Taints, isLaunchingTaint), nil
		})
		if err != nil {
			return fmt.Errorf("node %s not in the cache as it is, %w", node.Name, err)
		}
	}
	return nil
}

// releaseLeftovers opens the nodes a batch left held: one of a controller that stopped
// mid-batch, or whose release failed. A batch in flight holds its own (launching, by name)
// until its last launch; a finished batch's are opened in the cache, so what else still
// looks held was left.
func (c *Controller) releaseLeftovers(ctx context.Context, snapshot *Snapshot, launching sets.Set[string]) error {
	return c.release(ctx, slices.DeleteFunc(snapshot.heldNodes(), func(node *corev1.Node) bool { return launching.Has(node.Name) }))
}

// reservedLaunch is a launch group with room reserved under the limits for each of its nodes.
type reservedLaunch struct {
	// provisioner is the pass's copy: the pass goes on writing its own status.
	provisioner *v1alpha5.Provisioner
	// group has the nodes reserved for and the candidates that fit under the limits.
	group        *launchGroup
	reservations []int
	// planned is what the batch in flight says of each node.
	planned []*plannedLaunch
	// seen are the Provisioner's nodes the plan saw: a launch answered with one of them was
	// answered for an earlier plan (see LaunchUntaken).
	seen map[string]corev1.ResourceList
}

// reserve reserves room under the limits for each node of a group, as many as fit, with the
// candidates that fit beside all of them; fewer than the group's nodes (with an error: their
// pods stay pending for the next pass) when the limits allow fewer, none when they allow
// none.
func (c *Controller) reserve(g *launchGroup, p *v1alpha5.Provisioner, nodes map[string]corev1.ResourceList) (*reservedLaunch, error) {
	var limits corev1.ResourceList
	if p.Spec.Limits != nil {
		limits = p.Spec.Limits.Resources
	}
	// Each node reserves from the candidates the ones before it kept, so that the group's last
	// list, which launches them all, is within every reservation.
	kept := g.candidates
	var reservations []int
	var err error
	for _, n := range g.nodes {
		candidates, reservation, reserveErr := c.ledger.Reserve(p.Name, limits, nodes, kept)
		if reserveErr != nil {
			var exceeded *LimitExceededError
			if errors.As(reserveErr, &exceeded) {
				launchErrors.WithLabelValues(ReasonLimitExceeded).Inc()
				c.recorder.Event(p, corev1.EventTypeWarning, ReasonLimitExceeded, fmt.Sprintf("A node for %d pods was not launched, %v", len(n.Pods), reserveErr))
			}
			err = reserveErr
			break
		}
		kept = candidates
		reservations = append(reservations, reservation)
	}
	if len(reservations) == 0 {
		return nil, err
	}
	r := &reservedLaunch{
		provisioner:  p.DeepCopy(),
		group:        &launchGroup{provisioner: g.provisioner, candidates: kept, nodes: g.nodes[:len(reservations)]},
		reservations: reservations,
		seen:         nodes,
	}
	for _, n := range r.group.nodes {
		r.planned = append(r.planned, plannedFor(g.provisioner, n.Pods))
	}
	return r, err
}

// nodeCreateTimeout bounds the creation of a launched instance's Node, which goes on when the
// controller stops: an instance that exists gets its Node (or is terminated) then, rather than
// waiting for the next leader to adopt it.
const nodeCreateTimeout = 30 * time.Second

// launch makes a reserved group real with one cloud call: it asks the cloud for as many of
// the cheapest candidate with capacity as were reserved and creates a Node per instance, held
// when its batch is. The i-th Node returned is for the group's i-th node, nil where its Node
// could not be created; fewer come back when the cloud's capacity allowed fewer (with an
// error: their pods are pending again for the next pass). When a Node cannot be created, its
// instance is terminated rather than left without an owner.
func (c *Controller) launch(ctx context.Context, r *reservedLaunch, hold bool) ([]*corev1.Node, error) {
	p := r.provisioner
	failed := func(from int) {
		for i := from; i < len(r.reservations); i++ {
			c.ledger.Release(r.reservations[i])
			c.inFlight.failed(r.planned[i])
		}
	}
	if err := c.cloudCalls.Acquire(ctx, 1); err != nil {
		failed(0)
		return nil, fmt.Errorf("waiting to launch instances for provisioner %q, %w", p.Name, err)
	}
	instances, err := LaunchUntaken(ctx, c.instanceProvider, cloudprovider.LaunchRequest{
		Count:           len(r.reservations),
		Candidates:      r.group.candidates,
		ProvisionerName: p.Name,
		Labels:          LaunchLabels(p),
		Taints:          p.Spec.Taints,
		Provider:        p.Spec.Provider,
		IdempotencyKey:  idempotencyKey(p.Name, r.group.pods()),
	}, r.seen)
	c.cloudCalls.Release(1)
	if err != nil {
		failed(0)
		var capacity *cloudprovider.InsufficientCapacityError
		if errors.As(err, &capacity) {
			launchErrors.WithLabelValues(ReasonInsufficientCapacity).Inc()
			c.recorder.Event(p, corev1.EventTypeWarning, ReasonInsufficientCapacity,
				fmt.Sprintf("No capacity for %d nodes for %d pods in any of %d offerings: %s", len(r.reservations), len(r.group.pods()), len(capacity.Offerings), capacityReasons(capacity)))
		} else {
			launchErrors.WithLabelValues(ReasonCloudError).Inc()
		}
		return nil, fmt.Errorf("launching instances for provisioner %q, %w", p.Name, err)
	}
	var errs []error
	launched := min(len(instances), len(r.reservations))
	failed(launched)
	if len(instances) < len(r.reservations) {
		launchErrors.WithLabelValues(ReasonInsufficientCapacity).Inc()
		errs = append(errs, fmt.Errorf("the cloud launched %d of %d instances for provisioner %q", len(instances), len(r.reservations), p.Name))
	}
	// The Nodes are created several at once: one by one, a large group's would wait on the
	// API server in turn.
	created := make([]*corev1.Node, launched)
	var mu sync.Mutex
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	for i := range created {
		group.Go(func() error {
			registering, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodeCreateTimeout)
			defer cancel()
			node, err := c.register(registering, r, i, instances[i], hold)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			created[i] = node
			return nil
		})
	}
	_ = group.Wait()
	return created, errors.Join(errs...)
}

// register counts the launched instance of a reserved group's i-th node in the ledger and the
// batch in flight, and creates its Node, held when its batch is. When the Node cannot be
// created, the instance is terminated at once rather than left to garbage collection's grace.
func (c *Controller) register(ctx context.Context, r *reservedLaunch, i int, instance *cloudprovider.Instance, hold bool) (*corev1.Node, error) {
	p := r.provisioner
	it := instanceTypeNamed(r.group.candidates, instance.InstanceType)
	if it != nil {
		c.ledger.Launched(r.reservations[i], instance.NodeName, it.Capacity)
	} else {
		c.ledger.Launched(r.reservations[i], instance.NodeName, nil)
	}
	c.inFlight.launched(r.planned[i], instance.NodeName)
	node := NodeFor(instance, p, it)
	if hold {
		node.Spec.Taints = append(node.Spec.Taints, launchingTaint)
	}
	if err := c.client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		launchErrors.WithLabelValues(ReasonNodeCreateFailed).Inc()
		if deleteErr := c.instanceProvider.Delete(ctx, instance.ProviderID); deleteErr != nil {
			err = errors.Join(err, fmt.Errorf("terminating the instance, %w", deleteErr))
		}
		c.ledger.Release(r.reservations[i])
		c.inFlight.failed(r.planned[i])
		return nil, fmt.Errorf("creating node %s for instance %s, %w", node.Name, instance.ProviderID, err)
	}
	if instance.FellBackFrom != nil {
		c.recorder.Event(p, corev1.EventTypeWarning, ReasonInsufficientCapacity,
			fmt.Sprintf("Node %s launched as %s in %s (%s) after no capacity in %d cheaper offerings: %s", node.Name, instance.InstanceType, instance.Zone,
				instance.CapacityType, len(instance.FellBackFrom.Offerings), capacityReasons(instance.FellBackFrom)))
	}
	nodesCreated.WithLabelValues(p.Name, instance.InstanceType, instance.Zone, instance.CapacityType).Inc()
	c.recorder.Eventf(p, corev1.EventTypeNormal, ReasonLaunched, "Launched node %s: %s in %s (%s) for %d pods", node.Name, instance.InstanceType, instance.Zone, instance.CapacityType, len(r.group.nodes[i].Pods))
	return node, nil
}

// plannedOntoOpenNodes is whether the plan puts a pending pod on a node that is not launching.
func plannedOntoOpenNodes(launching map[string]string, results *scheduling.Results) bool {
	return slices.ContainsFunc(results.Bindings, func(b scheduling.Binding) bool {
		_, ok := launching[b.NodeName]
		return !ok
	})
}

// tell gives each pending pod an Event when what it waits for changed: the launching node
// planned for it (and whether it is bound there), or why no Provisioner can take it. Pods
// awaited by a batch in flight were told of their node when it launched.
func (c *Controller) tell(launching map[string]string, pending []*corev1.Pod, awaited map[types.UID]string, results *scheduling.Results, bound map[*corev1.Pod]bool) {
	c.toldMu.Lock()
	defer c.toldMu.Unlock()
	for _, b := range results.Bindings {
		if _, ok := launching[b.NodeName]; !ok || c.told[b.Pod.UID] == b.NodeName {
			continue
		}
		c.told[b.Pod.UID] = b.NodeName
		if bound[b.Pod] {
			c.recorder.Eventf(b.Pod, corev1.EventTypeNormal, ReasonPlanned, "Bound to node %s, launching, to run once it is Ready", b.NodeName)
			continue
		}
		c.recorder.Eventf(b.Pod, corev1.EventTypeNormal, ReasonPlanned, "Waiting for node %s, launching, to become Ready", b.NodeName)
	}
	for _, e := range results.Unschedulable {
		if c.told[e.Pod.UID] == e.Reason {
			continue
		}
		c.told[e.Pod.UID] = e.Reason
		c.recorder.Event(e.Pod, corev1.EventTypeWarning, ReasonUnprovisionable, "No provisioner can launch a node for this pod: "+e.Reason)
	}
	// Pods no longer pending are forgotten: should one be pending again, it is told again.
	stillPending := map[types.UID]bool{}
	for _, pod := range pending {
		stillPending[pod.UID] = true
	}
	for uid := range c.told {
		if _, ok := awaited[uid]; !ok && !stillPending[uid] {
			delete(c.told, uid)
		}
	}
}

// recordPending sets karpenter_pods_pending: the pending pods by the provisioner whose new or
// launching node they were planned onto (or are awaited by), "" for those no provisioner can
// take.
func (c *Controller) recordPending(launching map[string]string, awaited map[types.UID]string, results *scheduling.Results) {
	counts := map[string]float64{}
	for _, provisioner := range awaited {
		counts[provisioner]++
	}
	if results != nil {
		for _, n := range results.NewNodes {
			counts[n.Provisioner] += float64(len(n.Pods))
		}
		for _, b := range results.Bindings {
			if provisioner, ok := launching[b.NodeName]; ok {
				counts[provisioner]++
			}
		}
		counts[""] = float64(len(results.Unschedulable))
	}
	podsPending.Reset()
	podsPending.WithLabelValues("").Set(counts[""])
	for provisioner, n := range counts {
		podsPending.WithLabelValues(provisioner).Set(n)
	}
}

// updateLimitsCondition marks a Provisioner whose limits leave room for none of its instance
// types not Ready, with what is used; it is Ready again once nodes go away.
func (c *Controller) updateLimitsCondition(plans map[string]*provisionerPlan) {
	for name, p := range plans {
		if p.instanceTypes == nil {
			continue
		}
		if p.updated.Spec.Limits == nil || len(p.updated.Spec.Limits.Resources) == 0 {
			p.updated.StatusConditions().MarkTrue(apis.ConditionReady)
			continue
		}
		used := c.ledger.Used(name, p.nodes)
		var exhausted *LimitExceededError
		for _, it := range p.instanceTypes {
			if exhausted = fitsUnder(name, p.updated.Spec.Limits.Resources, used, it.Capacity); exhausted == nil {
				break
			}
		}
		if exhausted != nil {
			p.updated.StatusConditions().MarkFalse(apis.ConditionReady, ReasonLimitsExhausted, "%s; no instance type fits under spec.limits", exhausted.Error())
		} else {
			p.updated.StatusConditions().MarkTrue(apis.ConditionReady)
		}
	}
}

// writeStatus patches what the pass changed of each Provisioner's status: the Ready
// condition (with an Event when it changes) and lastScaleTime. status.resources is the
// status controller's, and a merge patch leaves it as it is.
func (c *Controller) writeStatus(ctx context.Context, plans map[string]*provisionerPlan) error {
	var errs []error
	for _, name := range sortedNames(plans) {
		p := plans[name]
		if p.launched {
			p.updated.Status.LastScaleTime = &apis.VolatileTime{Inner: metav1.NewTime(c.clock.Now())}
		}
		events.OnConditionTransition(c.recorder, p.updated, p.stored.StatusConditions().GetCondition(apis.ConditionReady),
			p.updated.StatusConditions().GetCondition(apis.ConditionReady), &readyAgain)
		events.OnConditionTransition(c.recorder, p.updated, p.stored.StatusConditions().GetCondition(v1alpha5.ConditionPricesCurrent),
			p.updated.StatusConditions().GetCondition(v1alpha5.ConditionPricesCurrent), &pricesCurrentAgain)
		conditions.KeepTransitionTimes(p.stored.Status.Conditions, p.updated.Status.Conditions)
		if equality.Semantic.DeepEqual(p.stored.Status, p.updated.Status) {
			continue
		}
		if err := c.client.Status().Patch(ctx, p.updated, client.MergeFrom(p.stored)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("patching the status of provisioner %s, %w", name, err))
		}
	}
	return errors.Join(errs...)
}

var pricesCurrentAgain = events.Recovery{
	Reason:  "PricesCurrent",
	Message: func(*apis.Condition) string { return "The cloud's prices are read again" },
}

var readyAgain = events.Recovery{
	Reason:  "Ready",
	Message: func(was *apis.Condition) string { return "The provisioner can launch nodes again, after " + was.Reason },
}
