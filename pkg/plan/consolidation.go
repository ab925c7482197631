package plan

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	policyv1 "k8s.io/api/policy/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// Consolidation is what a consolidation pass would do now.
type Consolidation struct {
	// Action is delete, replace, or empty when the pass would do nothing.
	Action string `json:"action,omitempty"`
	// Nodes would be deleted; after the Replacements are Ready when there are any.
	Nodes        []string  `json:"nodes,omitempty"`
	Replacements []NewNode `json:"replacements,omitempty"`
	// PricePerHour is that of Nodes; SavingPerHour what the action takes off it.
	PricePerHour  float64 `json:"pricePerHour"`
	SavingPerHour float64 `json:"savingPerHour"`
	// Unsettled, when set, is why the pass would consider no node at all.
	Unsettled string `json:"unsettled,omitempty"`
	// Kept are the other nodes, each with why the pass leaves it.
	Kept []KeptNode `json:"kept"`
}

// KeptNode is a node consolidation leaves, and why: the reason of the Event the controller
// puts on it, or why it is not considered at all.
type KeptNode struct {
	Name    string `json:"name"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Reasons a node is not considered by consolidation at all; those of a node considered and
// kept are consolidation's Reason constants.
const (
	ReasonUnsettled             = "Unsettled"
	ReasonNotKarpenter          = "NotLaunchedByKarpenter"
	ReasonConsolidationDisabled = "ConsolidationDisabled"
	ReasonDeleting              = "Deleting"
	ReasonNoFinalizer           = "NoTerminationFinalizer"
	ReasonOutsaved              = "OtherActionSavesMore"
	ReasonSavesNothing          = "SavesNothing"
)

// Consolidate runs consolidation's decision on the snapshot, as a pass of the controller
// would, and explains every node the decision leaves.
func Consolidate(snapshot consolidation.Snapshot, settings consolidation.Settings) *Consolidation {
	decision := consolidation.Decide(snapshot, settings)
	out := &Consolidation{Action: string(decision.Action), PricePerHour: decision.Price, SavingPerHour: decision.Saving, Unsettled: decision.Unsettled, Kept: []KeptNode{}}
	acted := map[string]bool{}
	for _, n := range decision.Nodes {
		out.Nodes = append(out.Nodes, n.Name)
		acted[n.Name] = true
	}
	for _, replacement := range decision.Replacements {
		out.Replacements = append(out.Replacements, newNode(replacement))
	}
	consolidating := map[string]bool{}
	for _, p := range snapshot.Provisioners {
		consolidating[p.Provisioner.Name] = p.Provisioner.ConsolidationEnabled()
	}
	for _, n := range snapshot.Nodes {
		node := n.Node
		if acted[node.Name] {
			continue
		}
		kept := KeptNode{Name: node.Name}
		why, explained := decision.Skipped[node.Name]
		switch {
		case explained:
			kept.Reason, kept.Message = string(why.Reason), why.Message
		case decision.Unsettled != "":
			kept.Reason, kept.Message = ReasonUnsettled, decision.Unsettled
		case !nodes.IsLaunchedByKarpenter(node):
			kept.Reason, kept.Message = ReasonNotKarpenter, "no Provisioner or NodePool launched the node"
		case node.DeletionTimestamp != nil:
			kept.Reason, kept.Message = ReasonDeleting, "the node is being deleted"
		case !nodes.HasTerminationFinalizer(node):
			kept.Reason, kept.Message = ReasonNoFinalizer, "the node lacks the "+v1alpha5.TerminationFinalizer+" finalizer, without which it would go undrained; the termination controller puts it back"
		case !launchedByProvisioner(node.Labels):
			kept.Reason, kept.Message = ReasonConsolidationDisabled, "a NodePool's node: see the NodePools' consolidation"
		case !consolidating[node.Labels[v1alpha5.ProvisionerNameLabelKey]]:
			kept.Reason, kept.Message = ReasonConsolidationDisabled, "provisioner "+node.Labels[v1alpha5.ProvisionerNameLabelKey]+" does not have spec.consolidation.enabled"
		default:
			kept.Reason, kept.Message = otherwiseKept(decision.Action != consolidation.None)
		}
		out.Kept = append(out.Kept, kept)
	}
	slices.SortFunc(out.Kept, func(a, b KeptNode) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// otherwiseKept is why a node consolidation could remove is kept when nothing else says why: the
// pass took another action, or removing it would save nothing.
func otherwiseKept(acted bool) (reason, message string) {
	if acted {
		return ReasonOutsaved, "removing it would save less than the action chosen; a pass takes one action"
	}
	return ReasonSavesNothing, "its pods fit elsewhere, but removing it would save nothing"
}

// launchedByProvisioner is whether a Provisioner launched the node of these labels: a NodePool's nodes are not
// this plan's to consolidate.
func launchedByProvisioner(labels map[string]string) bool {
	_, ok := pools.ProvisionerOf(labels)
	return ok
}

// Reasons a NodePool's node is not consolidated beside those of the disruption controller's
// Events (disruption.Blocked* and disruption.Consolidation*).
const (
	ReasonNotConsolidatable = "NotConsolidatable"
	ReasonDisrupting        = "Disrupting"
	ReasonEmpty             = "Empty"
	ReasonDrifted           = "Drifted"
	ReasonNotLaunched       = "NotLaunched"
)

// NodePoolConsolidation is what the disruption controller's consolidation of underutilized
// nodes would do now with the NodePools given: the same candidates and budgets
// (disruption.Candidates, disruption.Decide) and the same decision
// (disruption.ConsolidateUnderutilized), on pools read as the provisioning plan reads them, and
// why each other node of a NodePool is kept. threshold is the controller's
// --consolidation-threshold, for NodePools that set no savingsThreshold.
func NodePoolConsolidation(ctx context.Context, snapshot *state.Snapshot, in Pools, lister cloudprovider.InstanceTypeLister, budgets []policyv1.PodDisruptionBudget,
	threshold float64, settings disruption.ConsolidationSettings) *Consolidation {
	planned := plannedPools(ctx, snapshot, Pools{NodePools: in.NodePools, NodeClasses: in.NodeClasses, MinValuesPolicy: in.MinValuesPolicy}, lister, &Report{})
	candidates := disruption.Candidates(snapshot, in.NodePools)
	decision := disruption.Decide(candidates, func(c *disruption.Candidate) *disruption.Blocked {
		blocked, _ := disruption.Block(c, budgets, snapshot.Now)
		return blocked
	}, snapshot.Now)
	under := disruption.ConsolidateUnderutilized(snapshot, decision.Underutilized, planned, threshold, settings)
	out := &Consolidation{PricePerHour: under.Price, SavingPerHour: under.Saving, Unsettled: under.Unsettled, Kept: []KeptNode{}}
	acted := map[string]bool{}
	for _, n := range under.Nodes() {
		out.Nodes = append(out.Nodes, n.Name)
		acted[n.Name] = true
	}
	for _, replacement := range under.Replacements {
		out.Replacements = append(out.Replacements, newNode(replacement))
	}
	switch {
	case len(out.Replacements) > 0:
		out.Action = string(consolidation.Replace)
	case len(out.Nodes) > 0:
		out.Action = string(consolidation.Delete)
	}
	taken := map[string]string{}
	for _, c := range decision.Empty {
		taken[c.Name()] = ReasonEmpty
	}
	for _, c := range decision.Drifted {
		taken[c.Name()] = ReasonDrifted
	}
	underutilized := map[string]bool{}
	for _, c := range decision.Underutilized {
		underutilized[c.Name()] = true
	}
	for _, c := range candidates {
		if c.Node == nil {
			out.Kept = append(out.Kept, KeptNode{Name: c.Name(), Reason: ReasonNotLaunched, Message: "nodeclaim " + c.Name() + " has no node yet"})
			continue
		}
		if acted[c.Node.Name] {
			continue
		}
		kept := KeptNode{Name: c.Node.Name}
		blocked, isBlocked := decision.Blocked[c.Name()]
		simulated, isSimulated := under.Kept[c.Node.Name]
		policy := cmp.Or(c.NodePool.Spec.Disruption.ConsolidationPolicy, v1.ConsolidationPolicyWhenEmptyOrUnderutilized)
		switch {
		case c.Disrupting:
			kept.Reason, kept.Message = ReasonDisrupting, "Karpenter is removing it already"
		case taken[c.Name()] == ReasonEmpty:
			kept.Reason, kept.Message = ReasonEmpty, "emptiness deletes it, not consolidation"
		case taken[c.Name()] == ReasonDrifted:
			kept.Reason, kept.Message = ReasonDrifted, "drift replaces it, not consolidation"
		case isBlocked:
			kept.Reason, kept.Message = blocked.Reason, blocked.Message
		case isSimulated:
			kept.Reason, kept.Message = simulated.Reason, simulated.Message
		case underutilized[c.Name()] && under.Unsettled != "":
			kept.Reason, kept.Message = ReasonUnsettled, under.Unsettled
		case policy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized:
			kept.Reason, kept.Message = ReasonConsolidationDisabled, fmt.Sprintf("NodePool %s's consolidationPolicy %s removes empty nodes only", c.NodePool.Name, policy)
		case !c.NodeClaim.IsTrue(v1.ConditionTypeConsolidatable):
			kept.Reason, kept.Message = ReasonNotConsolidatable, fmt.Sprintf("NodePool %s's consolidateAfter has not passed since a pod last arrived or left (or is Never)", c.NodePool.Name)
		default:
			kept.Reason, kept.Message = otherwiseKept(out.Action != "")
		}
		out.Kept = append(out.Kept, kept)
	}
	slices.SortFunc(out.Kept, func(a, b KeptNode) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
