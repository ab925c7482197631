package provisioning

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// One pass of the allocator: snapshot, plan, start the launches, tell the pods.

// poolPlan is a pool, a Provisioner or a NodePool, as one pass sees it.
type poolPlan struct {
	key pools.Key
	// stored and updated are the Provisioner as read and as the pass rewrites its status; nil
	// for a NodePool, whose status its own controller writes.
	stored, updated *v1alpha5.Provisioner
	// nodePool and nodeClass are the NodePool and its node class, read Ready; nil for a
	// Provisioner.
	nodePool      *v1.NodePool
	nodeClass     client.Object
	instanceTypes []*cloudprovider.InstanceType
	// unresolved is why its instance types could not be resolved, when only its user can fix it.
	unresolved *cloudprovider.ActionRequiredError
	nodes      map[string]corev1.ResourceList
	// launched is whether the pass started launching a node for it.
	launched bool
}

// goneNodeClaims are those of the NodeClaims named that the API server no longer holds. One it
// could not be asked about is not gone: a reservation kept a pass too long holds room a moment,
// one dropped too early lets a launch past the pool's limits. The first failed read ends the
// asking: the rest would most likely fail too, each after its own timeout, and log a line each.
func (c *Controller) goneNodeClaims(ctx context.Context, names []string) sets.Set[string] {
	gone := sets.New[string]()
	for i, name := range names {
		if err := c.reader.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{}); apierrors.IsNotFound(err) {
			gone.Insert(name)
		} else if err != nil {
			log.FromContext(ctx).Error(err, "reading the nodeclaims whose launches hold room under their pools' limits; keeping their room until a later pass",
				"nodeclaim", name, "unread", len(names)-i)
			break
		}
	}
	return gone
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
	cached := c.ledger.Cached()
	snapshot, plans, err := c.snapshot(ctx)
	if err != nil {
		return true, err
	}
	c.ledger.ForgetGone(snapshot.Nodes, c.goneNodeClaims(ctx, c.ledger.UnshownHandOvers(snapshot.NodeClaims, cached)), cached)
	// Those standing for NodeClaims whose Node has not registered too: their room is in the
	// snapshot, and the pods launched for them are counted there.
	shown := sets.New[string]()
	for _, node := range snapshot.AllNodes() {
		shown.Insert(node.Name)
	}
	retry = c.readUnread(ctx, shown)
	awaited := awaitedPending(snapshot, c.inFlight.awaited(captured, shown))
	snapshot.Pods = slices.DeleteFunc(snapshot.Pods, func(pod corev1.Pod) bool {
		a, ok := awaited[pod.UID]
		return ok && a.node == ""
	})
	for i := range snapshot.Pods {
		if a, ok := awaited[snapshot.Pods[i].UID]; ok {
			snapshot.Pods[i].Status.NominatedNodeName = a.node
		}
	}
	if len(captured) > 0 && slices.ContainsFunc(snapshot.Pending(), dependsOnDomains) {
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
	if !early {
		// A renomination may reach kube-scheduler after its last attempt, and pods nominated to
		// an open node are bound at its next: look again until they are (nominate.go).
		displaced, unbound := c.displaced(snapshot)
		changed, err := c.unnominate(ctx, displaced)
		if err != nil {
			log.FromContext(ctx).WithName(Name).Error(err, "clearing the nominations of pods whose node has no room left for them")
		}
		retry = retry || err != nil || changed || len(renominations) > 0 || unbound
	}
	binds := c.bindable(snapshot)
	var schedulable []scheduling.Pool
	for _, key := range sortedKeys(plans) {
		p := plans[key]
		// Instance types not read yet (the provider's first refresh) or unreadable: try again,
		// so that the Provisioner becomes Ready without waiting for a pod.
		retry = retry || p.instanceTypes == nil
		if p.instanceTypes != nil {
			// What counts against the limits is the ledger's: the nodes seen and the launches
			// in flight, never a status that may lag.
			schedulable = append(schedulable, p.schedulingPool(c.ledger.Used(key, p.nodes), c.minValuesPolicy))
		}
	}
	plan := PlanPending(snapshot, schedulable, Packer(c.packBudget, c.clock))
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
		filled = c.earlyHold.release(filled, c.clock.Now(), c.window.idle)
		if len(filled) == 0 {
			return false, nil
		}
		log.FromContext(ctx).WithName(Name).Info("launching the nodes an open batch has filled", "pending", len(plan.Pending), "filledNodes", len(filled),
			"newNodes", len(results.NewNodes), "duration", c.clock.Since(start).Round(time.Millisecond))
		c.nominatePlanned(ctx, renominations, results, launching, binds)
		c.startLaunches(ctx, filled, plans, binds)
		return false, c.writeStatus(ctx, plans)
	}
	c.earlyHold.reset()
	if len(plan.Pending) > 0 {
		planned := c.clock.Since(start)
		schedulingDuration.Observe(planned.Seconds())
		log.FromContext(ctx).WithName(Name).Info("planned pending pods", "pending", len(plan.Pending), "newNodes", len(results.NewNodes),
			"ontoExistingOrLaunchingNodes", len(results.Bindings), "unschedulable", len(results.Unschedulable), "awaitingLaunches", len(awaited),
			"planner", results.Packed.Planner(), "repackedGroups", results.Packed.Repacked, "packing", results.Packed.Took.Round(time.Millisecond), "duration", planned.Round(time.Millisecond))
		bound, placed := c.nominatePlanned(ctx, renominations, results, launching, binds)
		retry = !placed || retry
		retry = c.startLaunches(ctx, results.NewNodes, plans, binds) || retry
		c.tell(launching, results, bound, c.cannotLaunch(plans))
		// A pod no Provisioner can take now may be taken later without any change to the pod
		// (an offering's capacity returns, a node goes away under a limit): look again.
		retry = retry || len(results.Unschedulable) > 0
		// A pod kube-scheduler found no room for that the plan puts on an open node saw that
		// node before a binding kube-scheduler had already decided reached the cache; no update
		// of the pod may follow (its condition stays as it is), so look again.
		retry = retry || plannedOntoOpenNodes(launching, results)
	}
	c.forgetTold(plan.Pending, awaited)
	c.recordPending(launching, awaited, results)
	c.updateLimitsCondition(plans)
	c.launchFailures.mark(plans)
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
func awaitedPending(snapshot *state.Snapshot, awaited map[types.UID]awaitedPod) map[types.UID]awaitedPod {
	out := map[types.UID]awaitedPod{}
	for i := range snapshot.Pods {
		pod := &snapshot.Pods[i]
		if a, ok := awaited[pod.UID]; ok && pods.IsProvisionable(pod) {
			out[pod.UID] = a
		}
	}
	return out
}

func sortedKeys(plans map[pools.Key]*poolPlan) []pools.Key {
	keys := make([]pools.Key, 0, len(plans))
	for key := range plans {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, pools.Compare)
	return keys
}

// schedulingPool is the pool as the scheduler takes it, with used, what counts against its
// limits, and the policy for a NodePool's minValues.
func (p *poolPlan) schedulingPool(used corev1.ResourceList, minValuesPolicy scheduling.MinValuesPolicy) scheduling.Pool {
	if p.nodePool != nil {
		return LimitedNodePool(p.nodePool, p.instanceTypes, used, minValuesPolicy)
	}
	return Limited(p.updated, p.instanceTypes, used)
}

// launcherPool is the pool as the launcher takes it: a copy, as the pass goes on writing the
// Provisioner's status.
func (p *poolPlan) launcherPool() launcher.Pool {
	if p.nodePool != nil {
		return launcher.Pool{NodePool: p.nodePool, NodeClass: p.nodeClass}
	}
	return launcher.Pool{Provisioner: p.updated.DeepCopy()}
}

// object is the pool's object as read: the Provisioner or the NodePool.
func (p *poolPlan) object() client.Object {
	if p.nodePool != nil {
		return p.nodePool
	}
	return p.stored
}

// plannedOntoOpenNodes is whether the plan puts a pending pod on a node that stands open: not
// launching, and not one of the new nodes the pass launches for it.
func plannedOntoOpenNodes(launching map[string]string, results *scheduling.Results) bool {
	return slices.ContainsFunc(results.Bindings, func(b scheduling.Binding) bool {
		if _, ok := launching[b.NodeName]; ok {
			return false
		}
		return !slices.ContainsFunc(results.NewNodes, func(n *scheduling.NewNode) bool { return n.Hostname == b.NodeName })
	})
}
