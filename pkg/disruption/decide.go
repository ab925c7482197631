package disruption

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
)

// Candidate is a NodePool's NodeClaim as a disruption pass reads it.
type Candidate struct {
	NodeClaim *v1.NodeClaim
	// Node is its registered node; nil before it registers.
	Node     *corev1.Node
	NodePool *v1.NodePool
	// Pods are the movable pods bound or nominated to the node: those a disruption must find
	// room for.
	Pods []*corev1.Pod
	// Resident are the DaemonSets' and mirror pods running on the node: they move nowhere, but
	// their karpenter.sh/do-not-disrupt holds the node, as upstream lets them.
	Resident []*corev1.Pod
	// Disrupting is true once Karpenter is removing it: tainted karpenter.sh/disrupted or being
	// deleted. It counts against its NodePool's budgets until it is gone.
	Disrupting bool
}

// Name is the candidate's NodeClaim's name.
func (c *Candidate) Name() string { return c.NodeClaim.Name }

// Reasons a NodeClaim is not disrupted, the reason of the Event on it and its node; documented
// in docs/disruption.md.
const (
	BlockedDoNotDisruptNode = "DisruptionBlockedByNodeAnnotation"
	BlockedDoNotDisruptPod  = "DisruptionBlockedByPodAnnotation"
	BlockedPDB              = "DisruptionBlockedByPDB"
	BlockedBudget           = "DisruptionBudgetExhausted"
	BlockedNotInitialized   = "DisruptionNodeNotInitialized"
)

// Blocked is why a candidate is not disrupted.
type Blocked struct {
	Reason  string
	Message string
}

// Block is why the candidate may not be disrupted voluntarily now, nil when it may: its node is
// not initialized, it or one of its pods (its resident ones too) is annotated
// karpenter.sh/do-not-disrupt, or a
// PodDisruptionBudget would refuse evicting its pods. A pod's annotation that cannot be read
// holds nothing, and is returned in invalid for its owner to be told.
func Block(c *Candidate, budgets []policyv1.PodDisruptionBudget, now time.Time) (blocked *Blocked, invalid map[*corev1.Pod]error) {
	if c.Node == nil || !c.NodeClaim.IsTrue(v1.ConditionTypeInitialized) {
		return &Blocked{BlockedNotInitialized, "its node is not initialized yet"}, nil
	}
	if c.Node.Annotations[v1.DoNotDisruptAnnotationKey] == "true" {
		return &Blocked{BlockedDoNotDisruptNode, fmt.Sprintf("node %s is annotated %s", c.Node.Name, v1.DoNotDisruptAnnotationKey)}, nil
	}
	for _, pod := range slices.Concat(c.Pods, c.Resident) {
		until, held, err := pods.DoNotDisruptUntil(pod, now)
		if err != nil {
			if invalid == nil {
				invalid = map[*corev1.Pod]error{}
			}
			invalid[pod] = err
			continue
		}
		if !held {
			continue
		}
		message := fmt.Sprintf("pod %s/%s is annotated %s", pod.Namespace, pod.Name, v1.DoNotDisruptAnnotationKey)
		if !until.IsZero() {
			message += " until " + until.UTC().Format(time.RFC3339)
		}
		return &Blocked{BlockedDoNotDisruptPod, message}, invalid
	}
	if pdb := pods.BlockingDisruptionBudget(c.Pods, budgets); pdb != "" {
		return &Blocked{BlockedPDB, fmt.Sprintf("PodDisruptionBudget %s allows no more disruptions now", pdb)}, invalid
	}
	return nil, invalid
}

// DriftsPast is whether drift replaces the candidate although why holds it: as upstream's
// eventual disruption, a NodeClaim with a terminationGracePeriod has a bounded drain, so
// do-not-disrupt pods and PodDisruptionBudgets delay its removal by that much at most rather
// than forever. A do-not-disrupt node, or one not initialized, still holds it.
func DriftsPast(c *Candidate, why *Blocked) bool {
	return why != nil && c.NodeClaim.Spec.TerminationGracePeriod != nil && (why.Reason == BlockedDoNotDisruptPod || why.Reason == BlockedPDB)
}

// Decision is what one pass disrupts, method by method in upstream's order, and why it leaves
// the rest.
type Decision struct {
	// Empty are nodes without movable pods, consolidatable, to delete now.
	Empty []*Candidate
	// Drifted are drifted nodes to replace, in order: each gets the replacements its pods need
	// before it is deleted.
	Drifted []*Candidate
	// Underutilized are consolidatable nodes with pods of NodePools whose policy is
	// WhenEmptyOrUnderutilized, all within their budgets together: a consolidation may remove
	// any of them, and the simulation says which (Simulation.Consolidate).
	Underutilized []*Candidate
	// Blocked explains, by NodeClaim name, every candidate a method wanted and did not take.
	Blocked map[string]Blocked
	// Allowed is, by NodePool and reason, how many more nodes the budgets allowed disrupted
	// when the pass started; BudgetErrors say which NodePools' budgets could not be read.
	Allowed      map[string]map[v1.DisruptionReason]int
	BudgetErrors map[string]error
	// Eligible counts, by reason, the nodes a method wanted that nothing but a budget held.
	Eligible map[v1.DisruptionReason]int
}

// Decide is one disruption pass on the candidates: emptiness, drift, then consolidation of
// underutilized nodes, each within its NodePool's budgets for its reason, the nodes already
// disrupting counted against them. block says why a candidate may not be disrupted (Block); it
// is asked only of the candidates a method wants. A node is taken by one method only.
func Decide(candidates []*Candidate, block func(*Candidate) *Blocked, now time.Time) Decision {
	d := Decision{Blocked: map[string]Blocked{}, Allowed: map[string]map[v1.DisruptionReason]int{}, BudgetErrors: map[string]error{},
		Eligible: map[v1.DisruptionReason]int{}}
	// As upstream counts them: a budget's share is of the initialized nodes (a replacement still
	// launching would raise a percentage's round-up while its node is not yet room), and a node
	// not Ready is out already, as one being disrupted is.
	total, disrupting := map[string]int{}, map[string]int{}
	for _, c := range candidates {
		if c.Node == nil || !c.NodeClaim.IsTrue(v1.ConditionTypeInitialized) {
			continue
		}
		total[c.NodePool.Name]++
		if c.Disrupting || !nodes.IsReady(c.Node) {
			disrupting[c.NodePool.Name]++
		}
	}
	for _, np := range nodePools(candidates) {
		d.Allowed[np.Name] = map[v1.DisruptionReason]int{}
		for _, reason := range []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized} {
			n, err := Allowed(np.Spec.Disruption.Budgets, reason, total[np.Name], disrupting[np.Name], now)
			if err != nil {
				d.BudgetErrors[np.Name] = err
			}
			d.Allowed[np.Name][reason] = n
		}
	}
	// taken counts, by NodePool, the nodes this pass disrupts: they count against every budget
	// after them, as those already disrupting do.
	taken := map[string]int{}
	chosen := map[string]bool{}
	take := func(method v1.DisruptionReason, candidates []*Candidate, eligible func(*Candidate) bool) []*Candidate {
		var out []*Candidate
		for _, c := range candidates {
			if c.Disrupting || chosen[c.Name()] || !eligible(c) {
				continue
			}
			if why := block(c); why != nil && (method != v1.DisruptionReasonDrifted || !DriftsPast(c, why)) {
				d.Blocked[c.Name()] = *why
				continue
			}
			d.Eligible[method]++
			if d.Allowed[c.NodePool.Name][method]-taken[c.NodePool.Name] <= 0 {
				d.Blocked[c.Name()] = Blocked{BlockedBudget, fmt.Sprintf("NodePool %s's budgets allow no more %s nodes disrupted now", c.NodePool.Name, strings.ToLower(string(method)))}
				continue
			}
			taken[c.NodePool.Name]++
			chosen[c.Name()] = true
			out = append(out, c)
		}
		return out
	}
	d.Empty = take(v1.DisruptionReasonEmpty, candidates, func(c *Candidate) bool {
		return len(c.Pods) == 0 && c.NodeClaim.IsTrue(v1.ConditionTypeConsolidatable)
	})
	d.Drifted = take(v1.DisruptionReasonDrifted, candidates, func(c *Candidate) bool { return c.NodeClaim.IsTrue(v1.ConditionTypeDrifted) })
	// The budget goes to the nodes cheapest to disrupt (DisruptionCost: with no pod deletion
	// cost or priority set, those with the fewest pods), so that a pass weighs the
	// consolidations that disturb least, as upstream orders them. Balanced NodePools' nodes are
	// candidates too; the consolidation scores their saving against their disruption.
	cost := make(map[*Candidate]float64, len(candidates))
	for _, c := range candidates {
		cost[c] = DisruptionCost(c.Pods)
	}
	cheapest := slices.Clone(candidates)
	slices.SortStableFunc(cheapest, func(a, b *Candidate) int { return cmp.Compare(cost[a], cost[b]) })
	d.Underutilized = take(v1.DisruptionReasonUnderutilized, cheapest, func(c *Candidate) bool {
		// Unset is the API's default.
		policy := cmp.Or(c.NodePool.Spec.Disruption.ConsolidationPolicy, v1.ConsolidationPolicyWhenEmptyOrUnderutilized)
		return policy != v1.ConsolidationPolicyWhenEmpty && len(c.Pods) > 0 && c.NodeClaim.IsTrue(v1.ConditionTypeConsolidatable)
	})
	return d
}

// nodePools are the candidates' NodePools, by name.
func nodePools(candidates []*Candidate) []*v1.NodePool {
	var out []*v1.NodePool
	for _, c := range candidates {
		if !slices.ContainsFunc(out, func(np *v1.NodePool) bool { return np.Name == c.NodePool.Name }) {
			out = append(out, c.NodePool)
		}
	}
	slices.SortFunc(out, func(a, b *v1.NodePool) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
