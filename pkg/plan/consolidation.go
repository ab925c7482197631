package plan

import (
	"cmp"
	"slices"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pools"
)

// Consolidation is what a consolidation pass would do now.
type Consolidation struct {
	// Action is delete, replace, or empty when the pass would do nothing.
	Action string `json:"action,omitempty"`
	// Nodes would be deleted; after Replacement is Ready when there is one.
	Nodes       []string `json:"nodes,omitempty"`
	Replacement *NewNode `json:"replacement,omitempty"`
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
	if decision.Replacement != nil {
		replacement := newNode(decision.Replacement)
		out.Replacement = &replacement
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
			kept.Reason, kept.Message = ReasonConsolidationDisabled, "a NodePool's node: this plan consolidates Provisioners' nodes"
		case !consolidating[node.Labels[v1alpha5.ProvisionerNameLabelKey]]:
			kept.Reason, kept.Message = ReasonConsolidationDisabled, "provisioner "+node.Labels[v1alpha5.ProvisionerNameLabelKey]+" does not have spec.consolidation.enabled"
		case decision.Action != consolidation.None:
			kept.Reason, kept.Message = ReasonOutsaved, "removing it would save less than the action chosen; a pass takes one action"
		default:
			kept.Reason, kept.Message = ReasonSavesNothing, "its pods fit elsewhere, but removing it would save nothing"
		}
		out.Kept = append(out.Kept, kept)
	}
	slices.SortFunc(out.Kept, func(a, b KeptNode) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// launchedByProvisioner is whether a Provisioner launched the node of these labels: a NodePool's nodes are not
// this plan's to consolidate.
func launchedByProvisioner(labels map[string]string) bool {
	_, ok := pools.ProvisionerOf(labels)
	return ok
}
