package consolidation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// Snapshot is what one consolidation pass reads.
type Snapshot struct {
	// Nodes are every node with the pods bound to it, those being deleted included: they
	// count against their Provisioner's budget but take no pods.
	Nodes []scheduling.Node
	// Provisioners are every Provisioner with the instance types it may launch.
	Provisioners []Provisioner
	// Settling are the nodes, as the cluster has them, still launching or not yet opened by
	// Kubernetes (launched NodeClaims whose Node has yet to register included): the copies in
	// Nodes stand for the room they promise, their launch taints lifted, as provisioning counts
	// it, so they cannot tell.
	Settling []*corev1.Node
	// Question is what the scheduler is asked beside the moved pods and the room: the
	// DaemonSets' pods and the volumes that keep pods to zones, as provisioning asks it.
	Question state.Question
	// Budgets are the PodDisruptionBudgets, with the disruptions they allow now.
	Budgets []policyv1.PodDisruptionBudget
	// Pending is how many pods wait for capacity some Provisioner could give them: while any
	// do, the cluster is not settled. A pod none could serve waits for ever and does not count.
	Pending int
	// Counted is, by Provisioner, the capacity of its nodes by name that its limits count; a
	// launch reserves beside it (LaunchOptions). The Provisioners' status.resources already
	// hold what counts, launches in flight included.
	Counted map[string]map[string]corev1.ResourceList
	Now     time.Time
}

// Settings bound what a pass may do.
type Settings struct {
	// MinNodeAge is how long a node exists before it may be consolidated.
	MinNodeAge time.Duration
	// Threshold is the fraction of the nodes' price an action must save, so that
	// replacements do not chase pennies or flap.
	Threshold float64
	// MinSpotTypes is how many cheaper spot instance types a spot node's replacement must be
	// able to launch as, so that the choice stays diverse.
	MinSpotTypes int
	// NoSpotToSpot keeps a spot node from being replaced by a cheaper spot node (upstream's
	// feature gate SpotToSpotConsolidation=false); it may still be deleted.
	NoSpotToSpot bool
	// Pack, when set, is the batch packer the provisioning pass plans with, which chooses the
	// replacements of several nodes together.
	Pack *scheduling.Packer
}

// Consolidation is what bounds a consolidation's launches, NodePools' alike.
func (s Settings) Consolidation() disruption.ConsolidationSettings {
	return disruption.ConsolidationSettings{MinSpotTypes: s.MinSpotTypes, NoSpotToSpot: s.NoSpotToSpot, Pack: s.Pack}
}

// Action is what a pass does.
type Action string

const (
	// None changes nothing.
	None Action = ""
	// Delete removes nodes whose pods fit on the other nodes.
	Delete Action = "delete"
	// Replace launches cheaper nodes (one for one node, fewer than the nodes for several), then
	// removes the nodes whose pods fit on them and the other nodes.
	Replace Action = "replace"
)

// Reasons a Provisioner's node is not considered for consolidation, the reason of the Event
// on the node, documented in docs/node-lifecycle.md; those of a consolidation not worth it are
// pkg/disruption's Consolidation* reasons, shared with NodePools.
const (
	ReasonNotReady     = "ConsolidationNodeNotReady"
	ReasonTooYoung     = "ConsolidationNodeTooYoung"
	ReasonDoNotEvict   = "ConsolidationDoNotEvict"
	ReasonNoController = "ConsolidationPodWithoutController"
	ReasonPDB          = "ConsolidationBlockedByPDB"
	ReasonBudget       = "ConsolidationBudgetExhausted"
)

// Decision is the outcome of a pass.
type Decision struct {
	Action Action
	// Nodes are removed, after the Replacements are Ready when there are any.
	Nodes []*corev1.Node
	// Replacements are the new nodes of a replacement, their instance types narrowed to those
	// cheap enough for it to be worth it.
	Replacements []*scheduling.NewNode
	// Price is the hourly price of Nodes; Saving what the action takes off it.
	Price, Saving float64
	// Skipped explains, by node name, every node considered and not acted on.
	Skipped map[string]disruption.Blocked
	// Unsettled, when set, is why the pass considered no node at all.
	Unsettled string
	// ReplacedBy, on a Delete, names the Ready replacement an earlier pass launched for Nodes.
	ReplacedBy string
}

// Decide is one consolidation pass on a snapshot: every node of a Provisioner with
// consolidation enabled is considered; guards skip some, the scheduler simulates removing each
// of the rest alone and then the largest prefix of them together, and the action saving most
// is chosen. At most one action per pass: the next pass sees its effect.
func Decide(s Snapshot, settings Settings) Decision {
	decision := Decision{Skipped: map[string]disruption.Blocked{}}
	// One Decide simulates on the same pods once per candidate: their requests are kept.
	s.Question.Requests = scheduling.NewRequestCache()
	// A replacement is on its way, or Kubernetes has yet to open a node that became Ready: what
	// fits where changes when it is done.
	if len(s.Settling) > 0 {
		decision.Unsettled = fmt.Sprintf("node %s is launching", s.Settling[0].Name)
		return decision
	}
	if i := slices.IndexFunc(s.Nodes, func(n scheduling.Node) bool { return nodes.IsLaunching(n.Node) || nodes.HasConditionTaint(n.Node) }); i >= 0 {
		decision.Unsettled = fmt.Sprintf("node %s is launching", s.Nodes[i].Node.Name)
		return decision
	}
	for _, n := range s.Nodes {
		// Its pods are about to need room that a simulation would otherwise hand out.
		if n.Node.DeletionTimestamp != nil && slices.ContainsFunc(n.Pods, pods.IsMovable) {
			decision.Unsettled = fmt.Sprintf("node %s is draining", n.Node.Name)
			return decision
		}
	}
	if s.Pending > 0 {
		decision.Unsettled = fmt.Sprintf("%d pods wait for capacity", s.Pending)
		return decision
	}
	provisioners := map[string]*Provisioner{}
	for i := range s.Provisioners {
		provisioners[s.Provisioners[i].Provisioner.Name] = &s.Provisioners[i]
	}
	simulation := s.simulation()
	core := settings.Consolidation()
	if d, ok := resume(s, simulation, provisioners, settings, core); ok {
		d.Skipped = decision.Skipped
		return d
	}
	available := budgets(s, provisioners)
	var candidates []*disruption.Removal
	for i := range s.Nodes {
		n := &s.Nodes[i]
		p := provisioners[n.Node.Labels[v1alpha5.ProvisionerNameLabelKey]]
		// A node without its termination finalizer would go without a drain: it waits until
		// the termination controller has put the finalizer back.
		if !nodes.IsRemovable(n.Node) || p == nil || !p.Provisioner.ConsolidationEnabled() {
			continue
		}
		c, why := guard(n, p, s, settings)
		if why != nil {
			decision.Skipped[n.Node.Name] = *why
			continue
		}
		if available[p.Provisioner.Name] <= 0 {
			decision.Skipped[n.Node.Name] = disruption.Blocked{Reason: ReasonBudget, Message: fmt.Sprintf("provisioner %s already disrupts as many nodes as its consolidation budget allows", p.Provisioner.Name)}
			continue
		}
		candidates = append(candidates, c)
	}
	disruption.SortRemovals(candidates)
	best, kept := simulation.Best(candidates, withinBudgets(candidates, available), core)
	maps.Copy(decision.Skipped, kept)
	if len(best.Removed) == 0 {
		return decision
	}
	for _, r := range best.Removed {
		delete(decision.Skipped, r.Node.Name)
	}
	out := decisionOf(best)
	out.Skipped = decision.Skipped
	return out
}

// decisionOf is the pass's action for a consolidation.
func decisionOf(c disruption.Consolidation) Decision {
	d := Decision{Action: Delete, Nodes: c.Nodes(), Replacements: c.Replacements, Price: c.Price, Saving: c.Saving}
	if len(c.Replacements) > 0 {
		d.Action = Replace
	}
	return d
}

// simulation is the snapshot as consolidations are simulated on it: the nodes not being deleted
// are the room, the Provisioners the pools.
func (s Snapshot) simulation() disruption.Simulation {
	room := make([]scheduling.Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		if n.Node.DeletionTimestamp == nil {
			room = append(room, n)
		}
	}
	pools := make([]scheduling.Pool, 0, len(s.Provisioners))
	for _, p := range s.Provisioners {
		pools = append(pools, p.Pool())
	}
	return disruption.Simulation{Question: s.Question, Room: room, Pools: pools}
}

// resume finishes a replacement an earlier pass launched, perhaps in a controller since
// restarted: once the replacement is Ready, the nodes its annotation names are deleted when
// their pods still fit, rather than decided on afresh, when the replacement's empty room would
// invite other moves and the old nodes could stay. Their budget was taken when it launched.
func resume(s Snapshot, simulation disruption.Simulation, provisioners map[string]*Provisioner, settings Settings, core disruption.ConsolidationSettings) (Decision, bool) {
	byName := map[string]*scheduling.Node{}
	for i := range s.Nodes {
		byName[s.Nodes[i].Node.Name] = &s.Nodes[i]
	}
	for _, n := range s.Nodes {
		replaces, ok := n.Node.Annotations[v1alpha5.ReplacesAnnotationKey]
		if !ok || n.Node.DeletionTimestamp != nil {
			continue
		}
		var removed []*disruption.Removal
		for _, name := range strings.Split(replaces, ",") {
			old, ok := byName[name]
			// A node of that name created after the replacement is another node.
			if !ok || !nodes.IsRemovable(old.Node) || old.Node.CreationTimestamp.After(n.Node.CreationTimestamp.Time) {
				continue
			}
			p := provisioners[old.Node.Labels[v1alpha5.ProvisionerNameLabelKey]]
			if p == nil {
				continue
			}
			// A node that can no longer go is explained by the ordinary pass.
			c, why := guard(old, p, s, settings)
			if why != nil {
				removed = nil
				break
			}
			removed = append(removed, c)
		}
		if len(removed) == 0 {
			continue
		}
		if c, why := simulation.Consolidate(removed, core); why == nil && len(c.Replacements) == 0 {
			d := decisionOf(c)
			d.ReplacedBy = n.Node.Name
			return d, true
		}
	}
	return Decision{}, false
}

// budgets is how many more nodes each Provisioner may have disrupted: its budget of its nodes,
// less those being deleted.
func budgets(s Snapshot, provisioners map[string]*Provisioner) map[string]int {
	total, deleting := map[string]int{}, map[string]int{}
	for _, n := range s.Nodes {
		name := n.Node.Labels[v1alpha5.ProvisionerNameLabelKey]
		total[name]++
		if n.Node.DeletionTimestamp != nil {
			deleting[name]++
		}
	}
	out := map[string]int{}
	for name, p := range provisioners {
		budget := v1alpha5.DefaultConsolidationBudget
		if c := p.Provisioner.Spec.Consolidation; c != nil && c.Budget != nil {
			budget = *c.Budget
		}
		// Admission keeps the budget well formed; one that is not allows nothing.
		allowed, err := intstr.GetScaledValueFromIntOrPercent(&budget, total[name], true)
		if err != nil {
			allowed = 0
		}
		out[name] = allowed - deleting[name]
	}
	return out
}

// withinBudgets are the candidates, in order, that every Provisioner's budget allows together.
func withinBudgets(candidates []*disruption.Removal, available map[string]int) []*disruption.Removal {
	left := maps.Clone(available)
	var out []*disruption.Removal
	for _, c := range candidates {
		if left[c.Pool] > 0 {
			left[c.Pool]--
			out = append(out, c)
		}
	}
	return out
}

// guard is the node as a candidate, or why it may not be one.
func guard(n *scheduling.Node, p *Provisioner, s Snapshot, settings Settings) (*disruption.Removal, *disruption.Blocked) {
	node := n.Node
	if !nodes.IsReady(node) || node.Spec.Unschedulable {
		return nil, &disruption.Blocked{Reason: ReasonNotReady, Message: "node is not Ready or is cordoned"}
	}
	if age := s.Now.Sub(node.CreationTimestamp.Time); age < settings.MinNodeAge {
		return nil, &disruption.Blocked{Reason: ReasonTooYoung, Message: fmt.Sprintf("node is younger than the minimum age of %s", settings.MinNodeAge)}
	}
	c := &disruption.Removal{Node: node, Pool: p.Provisioner.Name, Threshold: settings.Threshold}
	for _, pod := range n.Pods {
		if pods.HoldsNode(pod) {
			return nil, &disruption.Blocked{Reason: ReasonDoNotEvict, Message: fmt.Sprintf("pod %s/%s is annotated %s", pod.Namespace, pod.Name, pods.DoNotEvictAnnotationKey)}
		}
		if !pods.IsMovable(pod) {
			continue
		}
		if metav1.GetControllerOf(pod) == nil {
			return nil, &disruption.Blocked{Reason: ReasonNoController, Message: fmt.Sprintf("pod %s/%s has no controller to recreate it", pod.Namespace, pod.Name)}
		}
		c.Pods = append(c.Pods, pod)
	}
	if pdb := pods.BlockingDisruptionBudget(c.Pods, s.Budgets); pdb != "" {
		return nil, &disruption.Blocked{Reason: ReasonPDB, Message: fmt.Sprintf("PodDisruptionBudget %s allows no more disruptions now", pdb)}
	}
	price, ok := disruption.Price(node, p.InstanceTypes)
	if !ok {
		return nil, &disruption.Blocked{Reason: disruption.ConsolidationUnknownPrice, Message: "no offering of the node's instance type, zone and capacity type is known"}
	}
	c.Price = price
	return c, nil
}

// Input is the scheduler's question: where do the moved pods go, given the room of the nodes
// but those removed (and those being deleted, which take nothing) and the provisioners.
// Consolidation, expiry and their plans all ask it so, as provisioning does.
func (s Snapshot) Input(moved []*corev1.Pod, provisioners []Provisioner, removed map[string]bool) scheduling.Input {
	room := make([]scheduling.Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		if !removed[n.Node.Name] && n.Node.DeletionTimestamp == nil {
			room = append(room, n)
		}
	}
	pools := make([]scheduling.Pool, 0, len(provisioners))
	for _, p := range provisioners {
		pools = append(pools, p.Pool())
	}
	return s.Question.Input(moved, pools, room)
}

// Provisioner is a Provisioner with the instance types it may launch, as consolidation reads
// it: its consolidation settings and budget, and as a pool of the scheduler (Pool), its
// status.resources what counts against its limits. Consolidation and expiry disrupt
// Provisioners' nodes; a NodePool's are the disruption controller's.
type Provisioner struct {
	Provisioner   *v1alpha5.Provisioner
	InstanceTypes []*cloudprovider.InstanceType
}

// Pool is the Provisioner as the scheduler takes it.
func (p Provisioner) Pool() scheduling.Pool {
	return scheduling.FromProvisioner(p.Provisioner, p.InstanceTypes)
}
