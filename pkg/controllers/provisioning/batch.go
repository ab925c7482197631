package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// A pass's launches: room reserved under the limits, launched in the background as one batch
// through the launcher, the batch's Nodes opened together and its pods placed.

// startLaunches reserves room under the limits for the plan's new nodes and launches them in
// the background: the next pass is planned while they run, without their pods until their
// Nodes are in the cache (inFlight). It reports whether the limits refused some.
func (c *Controller) startLaunches(ctx context.Context, newNodes []*scheduling.NewNode, plans map[pools.Key]*poolPlan, binds bindable) (retry bool) {
	batch, launches, retry := c.reserveAll(ctx, newNodes, plans)
	if batch == nil {
		return retry
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		if c.launchBatch(ctx, batch, launches, binds) {
			c.retryLater(ctx)
		}
	}()
	return retry
}

// reserveAll groups the plan's identical new nodes for one cloud call each, reserves room
// under the limits for them, and records them in flight as one batch; nil when the limits
// allow none. It reports whether the limits refused some.
func (c *Controller) reserveAll(ctx context.Context, newNodes []*scheduling.NewNode, plans map[pools.Key]*poolPlan) (*launchBatch, []*reservedLaunch, bool) {
	retry := false
	var launches []*reservedLaunch
	var planned []*plannedLaunch
	for _, g := range groupLaunches(newNodes, launchGroupSize(len(newNodes), c.launchLimit)) {
		p := plans[g.pool]
		r, err := c.reserve(g, p)
		if err != nil {
			retry = true
			log.FromContext(ctx).WithName(Name).Error(err, "reserving room for nodes", "pool", g.pool.String(), "nodes", len(g.nodes))
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

// launchBatch runs a batch's launches at once (the launcher bounds their calls). The pods binds
// allows are bound to their nodes as each launch's Nodes are registered, the rest nominated to
// theirs, and the batch's nodes are opened to kube-scheduler together once all are registered
// (see launchingTaint). The batch is in flight until then, and its pods bound. It reports whether any launch, binding, nomination or release failed for a reason
// that may pass.
func (c *Controller) launchBatch(ctx context.Context, batch *launchBatch, launches []*reservedLaunch, binds bindable) (retry bool) {
	defer c.inFlight.finish(batch)
	var mu sync.Mutex
	var group sync.WaitGroup
	var launched []*corev1.Node
	var nominations []nomination
	for _, r := range launches {
		group.Add(1)
		go func() {
			defer group.Done()
			nodes, err := c.launch(ctx, r)
			if err != nil {
				log.FromContext(ctx).WithName(Name).Error(err, "launching nodes", "pool", r.group.pool.String(), "nodes", len(r.group.nodes), "launched", len(nodes))
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
			// Bound at once: a bound pod counts where it is, held node or not.
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
					c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonPlanned, "Node %s (%s, %s) was launched for this pod by %s%s", node.Name,
						node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelTopologyZone], r.group.pool, how)
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
	if err := c.release(ctx, launched); err != nil {
		log.FromContext(ctx).WithName(Name).Error(err, "opening the batch's nodes to pods")
		retry, opened = true, false
	}
	if err := c.awaitCached(ctx, launched, opened); err != nil {
		log.FromContext(ctx).WithName(Name).Error(err, "waiting for the batch's nodes in the cache")
		retry = true
	}
	return retry
}

// cacheSyncTimeout bounds how long a pass waits for the cache to show what it wrote.
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
			if cached.UID != node.UID {
				// Another Node of its name (a stale one of a gone instance) not gone from the cache yet.
				return false, nil
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
func (c *Controller) releaseLeftovers(ctx context.Context, snapshot *state.Snapshot, launching sets.Set[string]) error {
	return c.release(ctx, slices.DeleteFunc(heldNodes(snapshot), func(node *corev1.Node) bool { return launching.Has(node.Name) }))
}

// reservedLaunch is a launch group with room reserved under the limits for each of its nodes.
type reservedLaunch struct {
	// pool is the pass's copy: the pass goes on writing a Provisioner's status.
	pool launcher.Pool
	// group has the nodes reserved for and the candidates that fit under the limits.
	group        *launchGroup
	reservations []int
	// planned is what the batch in flight says of each node.
	planned []*plannedLaunch
	// nodeClaims are each node's NodeClaim once created, nil where it could not be.
	nodeClaims []*v1.NodeClaim
}

// reserve reserves room under the limits for each node of a group, as many as fit, with the
// candidates that fit beside all of them; fewer than the group's nodes (with an error: their
// pods stay pending for the next pass) when the limits allow fewer, none when they allow
// none.
func (c *Controller) reserve(g *launchGroup, p *poolPlan) (*reservedLaunch, error) {
	pool := p.launcherPool()
	limits := pool.Limits()
	minValues := pool.MinValues()
	// Each node reserves from the candidates the ones before it kept, so that the group's last
	// list, which launches them all, is within every reservation.
	kept := g.candidates
	var reservations []int
	var err error
	for _, n := range g.nodes {
		candidates, reservation, reserveErr := c.ledger.Reserve(p.key, limits, p.nodes, kept, minValues)
		if reserveErr != nil {
			var exceeded *LimitExceededError
			if errors.As(reserveErr, &exceeded) {
				launchErrors.WithLabelValues(ReasonLimitExceeded).Inc()
				c.recorder.Event(pool.Object(), corev1.EventTypeWarning, ReasonLimitExceeded, fmt.Sprintf("A node for %d pods was not launched, %v", len(n.Pods), reserveErr))
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
		pool:         pool,
		group:        &launchGroup{pool: g.pool, candidates: kept, nodes: g.nodes[:len(reservations)]},
		reservations: reservations,
	}
	for _, n := range r.group.nodes {
		r.planned = append(r.planned, plannedFor(g.pool.Name, n.Pods))
	}
	return r, err
}

// launch makes a reserved group real: a NodeClaim for each node (with the launching taint as a
// startup taint, which holds its Node until the batch opens it), then one cloud call for as many of the cheapest
// candidate with capacity, then, for each instance, its NodeClaim's record of it, and its Node
// once its kubelet registered it and the NodeClaim lifecycle controller matched it. The i-th
// Node returned is for the group's i-th node, nil where none registered; fewer come back when
// the cloud's capacity allowed fewer (with an error: their pods are pending again for the next
// pass). An instance the cloud could not read back keeps its NodeClaim and its pods until a pass
// reads it (readUnread).
func (c *Controller) launch(ctx context.Context, r *reservedLaunch) ([]*corev1.Node, error) {
	p := r.pool
	fail := func(i int) {
		c.ledger.Release(r.reservations[i])
		c.inFlight.failed(r.planned[i])
	}
	request := launcher.Request{Pool: p, Candidates: r.group.candidates, Labels: r.group.labels(), Nodes: r.group.nodes,
		StartupTaints: []corev1.Taint{launchingTaint}}
	nodeClaims, done, createErr := c.launcher.CreateNodeClaims(ctx, request)
	defer done()
	var created []*v1.NodeClaim
	for i, nc := range nodeClaims {
		if nc == nil {
			fail(i)
			continue
		}
		c.inFlight.claimed(r.planned[i], nc.Name)
		created = append(created, nc)
	}
	if len(created) == 0 {
		return nil, fmt.Errorf("launching instances for %s, %w", p.Key(), createErr)
	}
	r.nodeClaims = nodeClaims
	instances, err := c.launcher.Launch(ctx, request, created)
	unread := (*cloudprovider.UnreadInstancesError)(nil)
	if err != nil && !errors.As(err, &unread) {
		for i, nc := range nodeClaims {
			if nc != nil {
				fail(i)
				if failErr := c.launcher.Fail(context.WithoutCancel(ctx), nc, err); failErr != nil {
					log.FromContext(ctx).WithName(Name).Error(failErr, "deleting a nodeclaim that got no instance")
				}
			}
		}
		var capacity *cloudprovider.InsufficientCapacityError
		if cloudprovider.ActionRequired(err) == nil && errors.As(err, &capacity) {
			launchErrors.WithLabelValues(ReasonInsufficientCapacity).Inc()
			c.recorder.Event(p.Object(), corev1.EventTypeWarning, ReasonInsufficientCapacity,
				fmt.Sprintf("No capacity for %d nodes for %d pods in any of %d offerings: %s", len(r.reservations), len(r.group.pods()), len(capacity.Offerings), capacityReasons(capacity)))
		} else {
			launchErrors.WithLabelValues(launchErrorReason(err)).Inc()
			c.reportLaunchFailure(p, err, r.group.pods())
		}
		return nil, errors.Join(fmt.Errorf("launching instances for %s, %w", p.Key(), err), createErr)
	}
	isUnread := map[*cloudprovider.Instance]bool{}
	all := instances
	if unread != nil {
		for _, instance := range unread.Instances {
			isUnread[instance] = true
		}
		all = append(slices.Clone(instances), unread.Instances...)
	}
	pairs, unlaunched := launcher.Assign(created, all)
	errs := []error{createErr}
	if len(unlaunched) > 0 {
		launchErrors.WithLabelValues(ReasonInsufficientCapacity).Inc()
		errs = append(errs, fmt.Errorf("the cloud launched %d of %d instances for %s", len(all), len(created), p.Key()))
	}
	var waiting []*corev1.Pod
	// The Nodes are awaited several at once: one by one, a large group's would wait on the
	// API server in turn.
	nodes := make([]*corev1.Node, len(r.group.nodes))
	var mu sync.Mutex
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	for i, nc := range nodeClaims {
		if nc == nil {
			continue
		}
		instance, ok := pairs[nc]
		if !ok {
			fail(i)
			if err := c.launcher.Fail(context.WithoutCancel(ctx), nc, errors.New("the cloud launched fewer instances than asked for")); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if isUnread[instance] {
			// It runs: it keeps its reservation and its pods until a pass reads it (readUnread),
			// rather than be launched again for the pods, uncounted; its NodeClaim records it now.
			it := launcher.InstanceTypeNamed(r.group.candidates, instance.InstanceType)
			if recorded, err := c.launcher.Record(ctx, nc, instance, it); err != nil {
				errs = append(errs, err)
			} else {
				r.nodeClaims[i] = recorded
			}
			c.ledger.Launched(r.reservations[i], nc.Name, "", capacityOf(it))
			c.inFlight.awaitRead(r.planned[i], &unreadLaunch{launch: r, index: i, instance: instance})
			waiting = append(waiting, r.group.nodes[i].Pods...)
			continue
		}
		group.Go(func() error {
			node, err := c.register(ctx, r, i, instance)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			nodes[i] = node
			return nil
		})
	}
	_ = group.Wait()
	if unread != nil {
		launchErrors.WithLabelValues(launchErrorReason(unread)).Inc()
		c.reportLaunchFailure(p, unread, waiting)
		errs = append(errs, fmt.Errorf("launching instances for %s, %w; they stay reserved for their pods until read", p.Key(), unread))
	}
	return nodes, errors.Join(errs...)
}

// register records the launched instance of a reserved group's i-th node on its NodeClaim, and
// returns the Node its kubelet registers once the NodeClaim lifecycle controller has registered
// it (see awaitRegistered).
func (c *Controller) register(ctx context.Context, r *reservedLaunch, i int, instance *cloudprovider.Instance) (*corev1.Node, error) {
	if err := c.record(ctx, r, i, instance); err != nil {
		return nil, err
	}
	node, err := c.awaitRegistered(ctx, r.nodeClaims[i])
	if errors.Is(err, errNodeClaimGone) {
		launchErrors.WithLabelValues(ReasonNodeNotRegistered).Inc()
		c.ledger.Release(r.reservations[i])
		c.inFlight.failed(r.planned[i])
	}
	if node != nil {
		// The ledger learns the cache shows it, so that a pass frees its room should it be
		// deleted before a pass counted it — even before the batch ends (its pods bound by
		// kube-scheduler meanwhile, the node deleted at once).
		c.ledger.NodeCached(r.reservations[i], node.UID)
	}
	return node, err
}

// record records the launched instance of a reserved group's i-th node on its NodeClaim, and
// counts it in the ledger and the batch in flight under the name its kubelet registers its Node
// as.
func (c *Controller) record(ctx context.Context, r *reservedLaunch, i int, instance *cloudprovider.Instance) error {
	p := r.pool
	it := launcher.InstanceTypeNamed(r.group.candidates, instance.InstanceType)
	nc, err := c.launcher.Record(ctx, r.nodeClaims[i], instance, it)
	if err != nil {
		c.ledger.Release(r.reservations[i])
		c.inFlight.failed(r.planned[i])
		return err
	}
	r.nodeClaims[i] = nc
	c.ledger.Launched(r.reservations[i], nc.Name, instance.NodeName, capacityOf(it))
	c.inFlight.launched(r.planned[i], instance.NodeName)
	if instance.FellBackFrom != nil {
		c.recorder.Event(p.Object(), corev1.EventTypeWarning, ReasonInsufficientCapacity,
			fmt.Sprintf("Node %s launched as %s in %s (%s) after no capacity in %d cheaper offerings: %s", instance.NodeName, instance.InstanceType, instance.Zone,
				instance.CapacityType, len(instance.FellBackFrom.Offerings), capacityReasons(instance.FellBackFrom)))
	}
	if c.launchFailures.succeeded(p.Key()) {
		// The Provisioner still says its launches fail: a pass writes it Ready again, even when
		// no pod is left pending to start one.
		c.batcher.poke()
	}
	nodesCreated.WithLabelValues(p.Key().Name, instance.InstanceType, instance.Zone, instance.CapacityType).Inc()
	c.recorder.Eventf(p.Object(), corev1.EventTypeNormal, ReasonLaunched, "Launched node %s: %s in %s (%s) for %d pods", instance.NodeName, instance.InstanceType, instance.Zone, instance.CapacityType, len(r.group.nodes[i].Pods))
	return nil
}

// errNodeClaimGone is awaitRegistered's answer for a NodeClaim deleted before its node
// registered: its pods are planned again.
var errNodeClaimGone = errors.New("the nodeclaim was deleted before its node registered")

// registeredPoll is how often awaitRegistered reads the cache.
const registeredPoll = 50 * time.Millisecond

// awaitRegistered returns the NodeClaim's Node once the cache shows it registered: its
// kubelet registered it and the NodeClaim lifecycle controller synced the NodeClaim onto it and
// lifted the unregistered taint, so that a pod bound or nominated there stays. It waits while
// the NodeClaim lives: the lifecycle controller deletes one whose node does not register in
// time.
func (c *Controller) awaitRegistered(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	var registered *corev1.Node
	err := wait.PollUntilContextCancel(ctx, registeredPoll, true, func(ctx context.Context) (bool, error) {
		current := &v1.NodeClaim{}
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(nc), current); err != nil {
			if !apierrors.IsNotFound(err) {
				return false, err
			}
			// The cache may not show the NodeClaim created a moment ago yet: only the API
			// server says it is gone (a batch saw four such "gone" at once in an e2e run, and
			// planned their pods again).
			if err := c.reader.Get(ctx, client.ObjectKeyFromObject(nc), current); err != nil {
				if apierrors.IsNotFound(err) {
					return false, errNodeClaimGone
				}
				return false, err
			}
		}
		if current.DeletionTimestamp != nil {
			return false, errNodeClaimGone
		}
		node, err := nodeclaims.NodeFor(ctx, c.client, nc)
		if err != nil || node == nil || !nodeclaims.Registered(node) {
			return false, err
		}
		registered = node
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the node of nodeclaim %s (instance %s) to register, %w", nc.Name, nc.Status.ProviderID, err)
	}
	return registered, nil
}
