package disruption

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// ConsolidationNotBalanced is why a Balanced NodePool's node is kept: the consolidation would
// save too little of the NodePool's cost for the share of its disruption it causes.
const ConsolidationNotBalanced = "ConsolidationNotBalanced"

// BalancedK is upstream's k for consolidationPolicy Balanced: a consolidation is worth it when
// the fraction of its NodePool's cost it saves is at least 1/k of the fraction of the NodePool's
// disruption cost it causes.
const BalancedK = 2

// EvictionCost is what evicting the pod costs, as upstream weighs it: 1, plus its
// controller.kubernetes.io/pod-deletion-cost over 2^27, plus its priority over 2^25, within
// [-10, 10]. A deletion cost that is not a number counts as none.
func EvictionCost(pod *corev1.Pod) float64 {
	cost := 1.0
	if value, ok := pod.Annotations[corev1.PodDeletionCost]; ok {
		if deletionCost, err := strconv.ParseFloat(value, 64); err == nil {
			cost += deletionCost / math.Exp2(27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / math.Exp2(25)
	}
	return min(max(cost, -10), 10)
}

// DisruptionCost is what disrupting a node costs: 1 for the node itself (draining, replacing),
// plus the eviction cost of each of its movable pods that costs anything.
func DisruptionCost(movable []*corev1.Pod) float64 {
	cost := 1.0
	for _, pod := range movable {
		cost += max(0, EvictionCost(pod))
	}
	return cost
}

// PoolTotals are a Balanced NodePool's whole: the hourly price and the disruption cost of all its
// nodes, which a consolidation's saving and disruption are fractions of.
type PoolTotals struct {
	Cost, DisruptionCost float64
}

// BalancedScore is the fraction of the pool's cost a consolidation saves over the fraction of
// its disruption cost it causes; it is worth it at 1/BalancedK or more. Nothing saved scores 0.
func BalancedScore(saving, disruption float64, totals PoolTotals) float64 {
	if saving <= 0 || totals.Cost <= 0 {
		return 0
	}
	if disruption <= 0 || totals.DisruptionCost <= 0 {
		return math.Inf(1)
	}
	return (saving / totals.Cost) / (disruption / totals.DisruptionCost)
}

// balancedTotals are the totals of the candidates' Balanced NodePools, by name: every node of the
// pool the snapshot shows counts, not only the candidates.
func balancedTotals(snapshot *state.Snapshot, candidates []*Candidate, nodePools []scheduling.Pool) map[string]PoolTotals {
	var balanced []v1.NodePool
	for _, c := range candidates {
		if c.NodePool.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyBalanced &&
			!slices.ContainsFunc(balanced, func(np v1.NodePool) bool { return np.Name == c.NodePool.Name }) {
			balanced = append(balanced, *c.NodePool)
		}
	}
	if len(balanced) == 0 {
		return nil
	}
	totals := map[string]PoolTotals{}
	for _, c := range Candidates(snapshot, balanced) {
		if c.Node == nil {
			continue
		}
		t := totals[c.NodePool.Name]
		if i := slices.IndexFunc(nodePools, func(p scheduling.Pool) bool { return p.Key == pools.NodePool(c.NodePool.Name) }); i >= 0 {
			if price, ok := Price(c.Node, nodePools[i].InstanceTypes); ok {
				t.Cost += price
			}
		}
		t.DisruptionCost += DisruptionCost(c.Pods)
		totals[c.NodePool.Name] = t
	}
	return totals
}

// notBalanced is why the consolidation is not worth it to one of its Balanced NodePools, nil when
// it is to all: each pool's share of the saving (by its share of the removed nodes' price) is
// scored against the disruption its own removed nodes cause.
func notBalanced(c Consolidation) *Blocked {
	type share struct {
		price, disruption float64
		totals            *PoolTotals
	}
	var names []string
	byPool := map[string]*share{}
	for _, r := range c.Removed {
		if r.Balanced == nil {
			continue
		}
		s := byPool[r.Pool]
		if s == nil {
			s = &share{totals: r.Balanced}
			byPool[r.Pool] = s
			names = append(names, r.Pool)
		}
		s.price += r.Price
		s.disruption += r.DisruptionCost
	}
	for _, name := range names {
		s := byPool[name]
		saving := c.Saving
		if c.Price > 0 {
			saving = c.Saving * s.price / c.Price
		}
		if score := BalancedScore(saving, s.disruption, *s.totals); score < 1.0/BalancedK {
			return &Blocked{ConsolidationNotBalanced, fmt.Sprintf("NodePool %s is Balanced: saving %.1f%% of its cost for %.1f%% of its disruption scores %.2f, under 1/%d",
				name, 100*saving/s.totals.Cost, 100*s.disruption/s.totals.DisruptionCost, score, BalancedK)}
		}
	}
	return nil
}
