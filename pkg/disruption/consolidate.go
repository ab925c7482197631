package disruption

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// Reasons a consolidation is not worth it or not possible, the reason of the Event on the node
// kept; Provisioners' and NodePools' nodes alike, documented in docs/node-lifecycle.md and
// docs/disruption.md.
const (
	ConsolidationUnknownPrice   = "ConsolidationUnknownPrice"
	ConsolidationPodsDoNotFit   = "ConsolidationPodsDoNotFit"
	ConsolidationNotCheaper     = "ConsolidationNotCheaper"
	ConsolidationSpotNotDiverse = "ConsolidationSpotNotDiverse"
	ConsolidationSpotToSpotOff  = "ConsolidationSpotToSpotDisabled"
	ConsolidationLimits         = "ConsolidationLimitsExceeded"
)

// Simulation is what a consolidation is simulated on: the scheduler's question (the DaemonSets'
// pods, the volumes that keep pods to zones), the nodes that may take the moved pods, and the
// pools that may launch replacements.
type Simulation struct {
	Question state.Question
	// Room are the nodes with room for pods; those removed are left out of each simulation.
	Room  []scheduling.Node
	Pools []scheduling.Pool
}

// Removal is a node a consolidation may remove.
type Removal struct {
	Node *corev1.Node
	// Pool is the name of the node's Provisioner or NodePool, whose budget it counts against.
	Pool string
	// Price is the hourly price of the offering it runs as.
	Price float64
	// Threshold is the fraction of its price a consolidation must save: its NodePool's
	// spec.disruption.savingsThreshold, or the controller's --consolidation-threshold.
	Threshold float64
	// Pods are its movable pods, which must find room elsewhere.
	Pods []*corev1.Pod
	// DisruptionCost is what removing it costs (DisruptionCost of its pods).
	DisruptionCost float64
	// Balanced, set when its NodePool's consolidationPolicy is Balanced, are the NodePool's
	// totals a consolidation's saving and disruption are scored against (BalancedScore).
	Balanced *PoolTotals
}

func (r *Removal) spot() bool {
	return r.Node.Labels[v1alpha5.CapacityTypeLabelKey] == v1alpha5.CapacityTypeSpot
}

// DefaultSavingsThreshold is the fraction of the nodes' price a replacement must save where
// neither --consolidation-threshold nor a NodePool's savingsThreshold says otherwise: a
// replacement does not chase pennies, and is not replaced again by something about as cheap.
const DefaultSavingsThreshold = 0.1

// DefaultSpotToSpotMinTypes is how many cheaper spot instance types a spot node's replacement
// needs, upstream's 15: with fewer, the replacement's choice is too narrow to ride out
// interruptions, and it would be the next interrupted.
const DefaultSpotToSpotMinTypes = 15

// ConsolidationSettings bound what a consolidation may launch.
type ConsolidationSettings struct {
	// MinSpotTypes is how many cheaper spot instance types a spot node's replacement must be
	// able to launch as, so that the choice stays diverse (upstream's 15).
	MinSpotTypes int
	// NoSpotToSpot keeps a spot node from being replaced by a cheaper spot node (upstream's
	// feature gate SpotToSpotConsolidation=false); it may still be deleted.
	NoSpotToSpot bool
	// Pack, when set, is the batch packer the provisioning pass plans with: it chooses the
	// replacements of several nodes against all their pods together, as it does a batch's new
	// nodes.
	Pack *scheduling.Packer
}

// Consolidation is removing some nodes, their pods moved to the other nodes and to the
// Replacements, new cheaper nodes launched first: one for one node, fewer than the nodes removed
// for several.
type Consolidation struct {
	Removed      []*Removal
	Replacements []*scheduling.NewNode
	// Price is the hourly price of the removed nodes; Saving what the consolidation takes off it.
	Price, Saving float64
}

// Nodes are the removed nodes.
func (c Consolidation) Nodes() []*corev1.Node {
	out := make([]*corev1.Node, 0, len(c.Removed))
	for _, r := range c.Removed {
		out = append(out, r.Node)
	}
	return out
}

// Consolidate simulates removing the nodes together: their pods are scheduled on the rest of
// the room and new nodes, one at most for one node and fewer than the nodes removed for
// several (the batch packer, settings.Pack, choosing their types). It is worth it when they all fit on
// the rest (a delete), or when the new nodes' cheapest offerings save the strictest threshold
// of the removed nodes' price; a spot node is replaced only by spot, each new node among at
// least MinSpotTypes cheaper types. The removed nodes' Balanced NodePools must each find it
// worth its disruption (notBalanced).
func (s Simulation) Consolidate(removed []*Removal, settings ConsolidationSettings) (Consolidation, *Blocked) {
	gone := map[string]bool{}
	out := Consolidation{Removed: removed}
	spot := false
	threshold := 0.0
	var moved []*corev1.Pod
	for _, r := range removed {
		gone[r.Node.Name] = true
		out.Price += r.Price
		spot = spot || r.spot()
		threshold = max(threshold, r.Threshold)
		moved = append(moved, pods.Unbound(r.Pods)...)
	}
	room := make([]scheduling.Node, 0, len(s.Room))
	for _, n := range s.Room {
		if !gone[n.Node.Name] {
			room = append(room, n)
		}
	}
	in := s.Question.Input(moved, s.Pools, room)
	in.Pack = settings.Pack
	results := scheduling.Schedule(in)
	if len(results.Unschedulable) > 0 {
		u := results.Unschedulable[0]
		// Told apart from pods that fit nowhere, as raising the limits is the answer.
		if unlimited := withoutLimits(s.Pools); unlimited != nil &&
			len(scheduling.Schedule(s.Question.Input(moved, unlimited, room)).Unschedulable) == 0 {
			return Consolidation{}, &Blocked{ConsolidationLimits, fmt.Sprintf("pod %s/%s fits only on a new node that would exceed its pool's limits", u.Pod.Namespace, u.Pod.Name)}
		}
		return Consolidation{}, &Blocked{ConsolidationPodsDoNotFit, fmt.Sprintf("pod %s/%s fits neither on the other nodes nor on a new one: %s", u.Pod.Namespace, u.Pod.Name, u.Reason)}
	}
	if len(results.NewNodes) == 0 {
		out.Saving = out.Price
		if why := notBalanced(out); why != nil {
			return Consolidation{}, why
		}
		return out, nil
	}
	// A replacement never grows the node count: several nodes are consolidated into fewer.
	if len(results.NewNodes) > max(1, len(removed)-1) {
		return Consolidation{}, &Blocked{ConsolidationNotCheaper, fmt.Sprintf("its pods would need %d new nodes, not fewer than the %d removed", len(results.NewNodes), len(removed))}
	}
	replacements, why := narrowed(results.NewNodes, out.Price, threshold, spot, settings)
	if why != nil {
		return Consolidation{}, why
	}
	out.Replacements = replacements
	out.Saving = out.Price
	for _, r := range replacements {
		out.Saving -= r.Price
	}
	if why := notBalanced(out); why != nil {
		return Consolidation{}, why
	}
	return out, nil
}

// narrowed are the new nodes with only the instance types cheap enough for the replacement to
// save the threshold, whichever each launches as: a lone new node may cost up to the ceiling
// (what the replacement may cost), several share what the ceiling leaves above their cheapest
// prices equally, so that every choice within each node's share keeps their sum under it. The
// ceiling is the removed nodes' price less the threshold. On spot removals only spot offerings
// count, and each node keeps at least MinSpotTypes types.
func narrowed(planned []*scheduling.NewNode, price, threshold float64, spot bool, settings ConsolidationSettings) ([]*scheduling.NewNode, *Blocked) {
	ceiling := price * (1 - threshold)
	if spot && settings.NoSpotToSpot {
		return nil, &Blocked{ConsolidationSpotToSpotOff, "a spot node is not replaced by another: the feature gate SpotToSpotConsolidation is false"}
	}
	cheapest := make([]float64, len(planned))
	total := 0.0
	for i, nn := range planned {
		cheapest[i] = math.Inf(1)
		for _, it := range nn.InstanceTypes {
			if p, ok := cheapestOffering(nn, it, spot); ok {
				cheapest[i] = min(cheapest[i], p)
			}
		}
		total += cheapest[i]
	}
	notCheaper := &Blocked{ConsolidationNotCheaper, fmt.Sprintf("no node that fits its pods costs %.0f%% less than $%.4f/h", threshold*100, price)}
	if len(planned) > 1 {
		notCheaper.Message = fmt.Sprintf("no %d nodes that fit its pods cost %.0f%% less than $%.4f/h", len(planned), threshold*100, price)
	}
	if len(planned) > 1 && !(total < ceiling) {
		return nil, notCheaper
	}
	out := make([]*scheduling.NewNode, 0, len(planned))
	for i, nn := range planned {
		share := ceiling
		if len(planned) > 1 {
			share = cheapest[i] + (ceiling-total)/float64(len(planned))
		}
		replacement := *nn
		replacement.InstanceTypes = nil
		replacement.Price = math.Inf(1)
		for _, it := range nn.InstanceTypes {
			if p, ok := cheapestOffering(nn, it, spot); ok && p < share {
				replacement.InstanceTypes = append(replacement.InstanceTypes, it)
				replacement.Price = min(replacement.Price, p)
			}
		}
		if spot && len(replacement.InstanceTypes) < settings.MinSpotTypes {
			return nil, &Blocked{ConsolidationSpotNotDiverse, fmt.Sprintf("a spot node is replaced only when at least %d spot instance types are cheaper by %.0f%%; %d are",
				settings.MinSpotTypes, threshold*100, len(replacement.InstanceTypes))}
		}
		if len(replacement.InstanceTypes) == 0 {
			return nil, notCheaper
		}
		if spot {
			replacement.Requirements = append(slices.Clone(replacement.Requirements), corev1.NodeSelectorRequirement{
				Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeSpot}})
		}
		out = append(out, &replacement)
	}
	return out, nil
}

// Best is the consolidation saving most: each removal alone, and the largest prefix of the
// removals the budgets allow at once, together (largestPrefix; in the order of SortRemovals);
// kept explains, by node name, why each removal not worth it alone is not. The
// zero Consolidation when none is.
func (s Simulation) Best(removals, together []*Removal, settings ConsolidationSettings) (best Consolidation, kept map[string]Blocked) {
	kept = map[string]Blocked{}
	for _, removal := range removals {
		c, why := s.Consolidate([]*Removal{removal}, settings)
		if why != nil {
			kept[removal.Node.Name] = *why
			continue
		}
		if c.Saving > best.Saving {
			best = c
		}
	}
	if multi := s.largestPrefix(together, settings); multi.Saving > best.Saving {
		best = multi
	}
	return best, kept
}

// largestPrefix is the consolidation of the largest prefix of the removals, two or more, that
// is worth it, found by binary search as upstream Karpenter does (simulating every subset is
// out of reach); the best saving seen is kept. The zero Consolidation when none is.
func (s Simulation) largestPrefix(prefix []*Removal, settings ConsolidationSettings) Consolidation {
	best := Consolidation{}
	// sort.Search finds the first size that fails, assuming larger prefixes fail once one
	// does.
	sort.Search(len(prefix)+1, func(size int) bool {
		if size < 2 {
			return false
		}
		c, why := s.Consolidate(prefix[:size], settings)
		if why != nil {
			return true
		}
		if c.Saving > best.Saving {
			best = c
		}
		return false
	})
	return best
}

// Price is the hourly price of the offering the node runs as, among its pool's instance types.
func Price(node *corev1.Node, instanceTypes []*cloudprovider.InstanceType) (float64, bool) {
	for _, it := range instanceTypes {
		if it.Name != node.Labels[corev1.LabelInstanceTypeStable] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == node.Labels[corev1.LabelTopologyZone] && o.CapacityType == node.Labels[v1alpha5.CapacityTypeLabelKey] {
				return o.Price, true
			}
		}
	}
	return 0, false
}

// withoutLimits is the pools with their limits lifted, or nil when none has any.
func withoutLimits(pools []scheduling.Pool) []scheduling.Pool {
	if !slices.ContainsFunc(pools, func(p scheduling.Pool) bool { return p.Limits != nil }) {
		return nil
	}
	out := slices.Clone(pools)
	for i := range out {
		out[i].Limits = nil
	}
	return out
}

// cheapestOffering is the price of the instance type's cheapest offering the new node may
// launch as, spot only when asked.
func cheapestOffering(n *scheduling.NewNode, it *cloudprovider.InstanceType, spotOnly bool) (float64, bool) {
	only := *n
	only.InstanceTypes = []*cloudprovider.InstanceType{it}
	for _, c := range only.Offerings() {
		if !spotOnly || c.Offering.CapacityType == v1alpha5.CapacityTypeSpot {
			return c.Offering.Price, true
		}
	}
	return 0, false
}

// SortRemovals orders removals cheapest to disrupt first: fewest pods, then the most expensive.
func SortRemovals(removals []*Removal) {
	slices.SortStableFunc(removals, func(a, b *Removal) int {
		return cmp.Or(cmp.Compare(len(a.Pods), len(b.Pods)), cmp.Compare(b.Price, a.Price), cmp.Compare(a.Node.Name, b.Node.Name))
	})
}

// SavingsThreshold is the fraction of its nodes' price a NodePool's consolidation must save:
// its spec.disruption.savingsThreshold, or fallback (the controller's --consolidation-threshold)
// when unset. The schema admits only percentages; anything else takes the fallback.
func SavingsThreshold(np *v1.NodePool, fallback float64) float64 {
	value := np.Spec.Disruption.SavingsThreshold
	if value == nil {
		return fallback
	}
	percent, err := strconv.Atoi(strings.TrimSuffix(*value, "%"))
	if err != nil || !strings.HasSuffix(*value, "%") || percent < 0 || percent > 100 {
		return fallback
	}
	return float64(percent) / 100
}
