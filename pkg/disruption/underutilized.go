package disruption

import (
	"fmt"
	"slices"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// Underutilized is the consolidation of NodePools' underutilized nodes a pass takes, and why it
// leaves the others.
type Underutilized struct {
	Consolidation
	// Kept explains, by node name, why each candidate a consolidation would not remove is kept.
	Kept map[string]Blocked
	// Unsettled, when set, is why the pass consolidates nothing now: what fits where is about to
	// change.
	Unsettled string
}

// ConsolidateUnderutilized decides on the underutilized candidates (Decision.Underutilized,
// within their budgets together): the scheduler simulates removing each alone and the largest
// prefix of them together, their pods moved to the other nodes of the snapshot (those being
// disrupted aside) and at most one new node of the pools, and the consolidation saving most is
// taken (Simulation.Best). A candidate's NodePool's savingsThreshold applies, fallback where it
// sets none; a Balanced NodePool's also scores the saving against the disruption (notBalanced). Nothing is taken while the cluster settles (Unsettled), or while pods wait for
// capacity the pools could give. The controller's pass and `kubectl karpenter plan
// --consolidation` both decide so.
func ConsolidateUnderutilized(snapshot *state.Snapshot, candidates []*Candidate, nodePools []scheduling.Pool, fallback float64, settings ConsolidationSettings) Underutilized {
	out := Underutilized{Kept: map[string]Blocked{}}
	if len(candidates) == 0 {
		return out
	}
	if out.Unsettled = Unsettled(snapshot); out.Unsettled != "" {
		return out
	}
	simulation := Simulation{Question: snapshot.Question(), Room: Room(snapshot), Pools: nodePools}
	// Every simulation of the pass schedules the same pods: their requests are kept.
	simulation.Question.Requests = scheduling.NewRequestCache()
	if pending := snapshot.Pending(); len(pending) > 0 {
		if servable := len(pending) - len(scheduling.Schedule(simulation.Question.Input(pending, nodePools, simulation.Room)).Unschedulable); servable > 0 {
			out.Unsettled = fmt.Sprintf("%d pods wait for capacity", servable)
			return out
		}
	}
	totals := balancedTotals(snapshot, candidates, nodePools)
	var removals []*Removal
	for _, candidate := range candidates {
		removal, why := removalOf(candidate, nodePools, fallback)
		if why != nil {
			out.Kept[candidate.Node.Name] = *why
			continue
		}
		if t, ok := totals[candidate.NodePool.Name]; ok {
			removal.Balanced = &t
		}
		removals = append(removals, removal)
	}
	SortRemovals(removals)
	best, kept := simulation.Best(removals, removals, settings)
	out.Consolidation = best
	for node, why := range kept {
		out.Kept[node] = why
	}
	// Not worth it alone, a node may be worth it with others.
	for _, removed := range best.Removed {
		delete(out.Kept, removed.Node.Name)
	}
	return out
}

// removalOf is the candidate as a consolidation removes it: its price among its NodePool's
// offerings, and the saving its NodePool asks of a replacement.
func removalOf(candidate *Candidate, nodePools []scheduling.Pool, fallback float64) (*Removal, *Blocked) {
	key := pools.NodePool(candidate.NodePool.Name)
	i := slices.IndexFunc(nodePools, func(p scheduling.Pool) bool { return p.Key == key })
	if i < 0 {
		return nil, &Blocked{Reason: ConsolidationUnknownPrice, Message: fmt.Sprintf("NodePool %s cannot launch now, so no price of its offerings is known", candidate.NodePool.Name)}
	}
	price, ok := Price(candidate.Node, nodePools[i].InstanceTypes)
	if !ok {
		return nil, &Blocked{Reason: ConsolidationUnknownPrice, Message: "no offering of the node's instance type, zone and capacity type is known"}
	}
	return &Removal{Node: candidate.Node, Pool: candidate.NodePool.Name, Price: price, Threshold: SavingsThreshold(candidate.NodePool, fallback), Pods: candidate.Pods,
		DisruptionCost: DisruptionCost(candidate.Pods)}, nil
}

// Room is the room of the snapshot's nodes pods may move to: those being disrupted aside.
func Room(snapshot *state.Snapshot) []scheduling.Node {
	return slices.DeleteFunc(snapshot.Room(), func(n scheduling.Node) bool { return nodes.IsDisrupted(n.Node) })
}

// Unsettled is why what fits where is about to change, so that consolidating now would decide
// on a cluster in motion: a NodeClaim or node still launching, or a node draining its pods —
// being deleted, its NodeClaim being deleted, or tainted disrupted (its pods about to need the
// room a simulation would otherwise hand out). Empty when the cluster is settled.
func Unsettled(snapshot *state.Snapshot) string {
	for i := range snapshot.NodeClaims {
		if nc := &snapshot.NodeClaims[i]; nc.DeletionTimestamp == nil && !nc.IsTrue(v1.ConditionTypeInitialized) {
			return fmt.Sprintf("nodeclaim %s is launching", nc.Name)
		}
	}
	all := snapshot.AllNodes()
	for i := range all {
		if node := &all[i]; node.DeletionTimestamp == nil && (nodes.IsLaunching(node) || nodes.HasConditionTaint(node)) {
			return fmt.Sprintf("node %s is launching", node.Name)
		}
	}
	draining := map[string]bool{}
	for i := range snapshot.Nodes {
		if node := &snapshot.Nodes[i]; node.DeletionTimestamp != nil || nodes.IsDisrupted(node) {
			draining[node.Name] = true
		}
	}
	for i := range snapshot.NodeClaims {
		if nc := &snapshot.NodeClaims[i]; nc.DeletionTimestamp != nil && nc.Status.NodeName != "" {
			draining[nc.Status.NodeName] = true
		}
	}
	if len(draining) == 0 {
		return ""
	}
	for i := range snapshot.Pods {
		if pod := &snapshot.Pods[i]; draining[pod.Spec.NodeName] && pods.IsMovable(pod) {
			return fmt.Sprintf("node %s is draining", pod.Spec.NodeName)
		}
	}
	return ""
}
