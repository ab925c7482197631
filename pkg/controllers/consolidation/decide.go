package consolidation

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
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
}

// Action is what a pass does.
type Action string

const (
	// None changes nothing.
	None Action = ""
	// Delete removes nodes whose pods fit on the other nodes.
	Delete Action = "delete"
	// Replace launches one cheaper node, then removes nodes whose pods fit on it and the
	// other nodes.
	Replace Action = "replace"
)

// Reason says why a node is not consolidated; it is the reason of the Event on the node.
type Reason string

// Reasons a node is not consolidated, documented in docs/node-lifecycle.md.
const (
	ReasonNotReady       Reason = "ConsolidationNodeNotReady"
	ReasonTooYoung       Reason = "ConsolidationNodeTooYoung"
	ReasonDoNotEvict     Reason = "ConsolidationDoNotEvict"
	ReasonNoController   Reason = "ConsolidationPodWithoutController"
	ReasonPDB            Reason = "ConsolidationBlockedByPDB"
	ReasonBudget         Reason = "ConsolidationBudgetExhausted"
	ReasonUnknownPrice   Reason = "ConsolidationUnknownPrice"
	ReasonPodsDoNotFit   Reason = "ConsolidationPodsDoNotFit"
	ReasonNotCheaper     Reason = "ConsolidationNotCheaper"
	ReasonSpotNotDiverse Reason = "ConsolidationSpotNotDiverse"
	ReasonSpotToSpotOff  Reason = "ConsolidationSpotToSpotDisabled"
	ReasonLimits         Reason = "ConsolidationLimitsExceeded"
)

// Explanation is why one node is not consolidated.
type Explanation struct {
	Reason  Reason
	Message string
}

// Decision is the outcome of a pass.
type Decision struct {
	Action Action
	// Nodes are removed, after Replacement is Ready when there is one.
	Nodes []*corev1.Node
	// Replacement is the one new node of a replacement, its instance types narrowed to those
	// cheap enough to be worth it.
	Replacement *scheduling.NewNode
	// Price is the hourly price of Nodes; Saving what the action takes off it.
	Price, Saving float64
	// Skipped explains, by node name, every node considered and not acted on.
	Skipped map[string]Explanation
	// Unsettled, when set, is why the pass considered no node at all.
	Unsettled string
	// ReplacedBy, on a Delete, names the Ready replacement an earlier pass launched for Nodes.
	ReplacedBy string
}

// candidate is a node that passed the guards.
type candidate struct {
	node        *corev1.Node
	provisioner string
	capacity    string
	price       float64
	movable     []*corev1.Pod
}

// Decide is one consolidation pass on a snapshot: every node of a Provisioner with
// consolidation enabled is considered; guards skip some, the scheduler simulates removing each
// of the rest alone and then the largest prefix of them together, and the action saving most
// is chosen. At most one action per pass: the next pass sees its effect.
func Decide(s Snapshot, settings Settings) Decision {
	decision := Decision{Skipped: map[string]Explanation{}}
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
	if d, ok := resume(s, provisioners, settings); ok {
		d.Skipped = decision.Skipped
		return d
	}
	available := budgets(s, provisioners)
	var candidates []*candidate
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
			decision.Skipped[n.Node.Name] = Explanation{ReasonBudget, fmt.Sprintf("provisioner %s already disrupts as many nodes as its consolidation budget allows", p.Provisioner.Name)}
			continue
		}
		candidates = append(candidates, c)
	}
	// The cheapest to disrupt first: fewest pods, then the most expensive.
	slices.SortStableFunc(candidates, func(a, b *candidate) int {
		return cmp.Or(cmp.Compare(len(a.movable), len(b.movable)), cmp.Compare(b.price, a.price), cmp.Compare(a.node.Name, b.node.Name))
	})
	best := Decision{}
	for _, c := range candidates {
		d, why := simulate(s, []*candidate{c}, settings)
		if why != nil {
			decision.Skipped[c.node.Name] = *why
			continue
		}
		if d.Saving > best.Saving {
			best = d
		}
	}
	if multi := multiNode(s, candidates, available, settings); multi.Saving > best.Saving {
		best = multi
	}
	if best.Action == None {
		return decision
	}
	for _, n := range best.Nodes {
		delete(decision.Skipped, n.Name)
	}
	best.Skipped = decision.Skipped
	return best
}

// resume finishes a replacement an earlier pass launched, perhaps in a controller since
// restarted: once the replacement is Ready, the nodes its annotation names are deleted when
// their pods still fit, rather than decided on afresh, when the replacement's empty room would
// invite other moves and the old nodes could stay. Their budget was taken when it launched.
func resume(s Snapshot, provisioners map[string]*Provisioner, settings Settings) (Decision, bool) {
	byName := map[string]*scheduling.Node{}
	for i := range s.Nodes {
		byName[s.Nodes[i].Node.Name] = &s.Nodes[i]
	}
	for _, n := range s.Nodes {
		replaces, ok := n.Node.Annotations[v1alpha5.ReplacesAnnotationKey]
		if !ok || n.Node.DeletionTimestamp != nil {
			continue
		}
		var removed []*candidate
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
		if d, why := simulate(s, removed, settings); why == nil && d.Action == Delete {
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

// guard is the node as a candidate, or why it may not be one.
func guard(n *scheduling.Node, p *Provisioner, s Snapshot, settings Settings) (*candidate, *Explanation) {
	node := n.Node
	if !nodes.IsReady(node) || node.Spec.Unschedulable {
		return nil, &Explanation{ReasonNotReady, "node is not Ready or is cordoned"}
	}
	if age := s.Now.Sub(node.CreationTimestamp.Time); age < settings.MinNodeAge {
		return nil, &Explanation{ReasonTooYoung, fmt.Sprintf("node is younger than the minimum age of %s", settings.MinNodeAge)}
	}
	c := &candidate{node: node, provisioner: p.Provisioner.Name, capacity: node.Labels[v1alpha5.CapacityTypeLabelKey]}
	for _, pod := range n.Pods {
		if pods.HoldsNode(pod) {
			return nil, &Explanation{ReasonDoNotEvict, fmt.Sprintf("pod %s/%s is annotated %s", pod.Namespace, pod.Name, pods.DoNotEvictAnnotationKey)}
		}
		if !pods.IsMovable(pod) {
			continue
		}
		if metav1.GetControllerOf(pod) == nil {
			return nil, &Explanation{ReasonNoController, fmt.Sprintf("pod %s/%s has no controller to recreate it", pod.Namespace, pod.Name)}
		}
		c.movable = append(c.movable, pod)
	}
	if pdb := pods.BlockingDisruptionBudget(c.movable, s.Budgets); pdb != "" {
		return nil, &Explanation{ReasonPDB, fmt.Sprintf("PodDisruptionBudget %s allows no more disruptions now", pdb)}
	}
	price, ok := nodePrice(node, p)
	if !ok {
		return nil, &Explanation{ReasonUnknownPrice, "no offering of the node's instance type, zone and capacity type is known"}
	}
	c.price = price
	return c, nil
}

// nodePrice is the hourly price of the offering the node runs as.
func nodePrice(node *corev1.Node, p *Provisioner) (float64, bool) {
	for _, it := range p.InstanceTypes {
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

// simulate schedules the pods of the nodes on the rest of the cluster and at most one new
// node, and says what removing them would save, or why it is not worth it.
func simulate(s Snapshot, removed []*candidate, settings Settings) (Decision, *Explanation) {
	gone := map[string]bool{}
	price := 0.0
	spot := false
	var moved []*corev1.Pod
	for _, c := range removed {
		gone[c.node.Name] = true
		price += c.price
		spot = spot || c.capacity == v1alpha5.CapacityTypeSpot
		for _, pod := range c.movable {
			pending := pod.DeepCopy()
			pending.Spec.NodeName = ""
			moved = append(moved, pending)
		}
	}
	results := scheduling.Schedule(s.Input(moved, s.Provisioners, gone))
	if len(results.Unschedulable) > 0 {
		u := results.Unschedulable[0]
		// Told apart from pods that fit nowhere, as raising the limits is the answer.
		if unlimited := withoutLimits(s.Provisioners); unlimited != nil &&
			len(scheduling.Schedule(s.Input(moved, unlimited, gone)).Unschedulable) == 0 {
			return Decision{}, &Explanation{ReasonLimits, fmt.Sprintf("pod %s/%s fits only on a new node that would exceed its Provisioner's spec.limits", u.Pod.Namespace, u.Pod.Name)}
		}
		return Decision{}, &Explanation{ReasonPodsDoNotFit, fmt.Sprintf("pod %s/%s fits neither on the other nodes nor on a new one: %s", u.Pod.Namespace, u.Pod.Name, u.Reason)}
	}
	nodesOf := func() []*corev1.Node {
		out := make([]*corev1.Node, 0, len(removed))
		for _, c := range removed {
			out = append(out, c.node)
		}
		return out
	}
	switch len(results.NewNodes) {
	case 0:
		return Decision{Action: Delete, Nodes: nodesOf(), Price: price, Saving: price}, nil
	case 1:
	default:
		return Decision{}, &Explanation{ReasonNotCheaper, fmt.Sprintf("its pods would need %d new nodes", len(results.NewNodes))}
	}
	// Worth it only below the threshold; a spot node only for spot, and only among enough
	// types that an interruption does not leave one choice.
	ceiling := price * (1 - settings.Threshold)
	replacement := *results.NewNodes[0]
	replacement.InstanceTypes = nil
	replacement.Price = math.Inf(1)
	for _, it := range results.NewNodes[0].InstanceTypes {
		cheapest, ok := cheapestOffering(&replacement, it, spot)
		if ok && cheapest < ceiling {
			replacement.InstanceTypes = append(replacement.InstanceTypes, it)
			replacement.Price = min(replacement.Price, cheapest)
		}
	}
	if spot {
		if settings.NoSpotToSpot {
			return Decision{}, &Explanation{ReasonSpotToSpotOff, "a spot node is not replaced by another: the feature gate SpotToSpotConsolidation is false"}
		}
		if len(replacement.InstanceTypes) < settings.MinSpotTypes {
			return Decision{}, &Explanation{ReasonSpotNotDiverse, fmt.Sprintf("a spot node is replaced only when at least %d spot instance types are cheaper by %.0f%%; %d are",
				settings.MinSpotTypes, settings.Threshold*100, len(replacement.InstanceTypes))}
		}
		replacement.Requirements = append(slices.Clone(replacement.Requirements), corev1.NodeSelectorRequirement{
			Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeSpot}})
	}
	if len(replacement.InstanceTypes) == 0 {
		return Decision{}, &Explanation{ReasonNotCheaper, fmt.Sprintf("no node that fits its pods costs %.0f%% less than $%.4f/h", settings.Threshold*100, price)}
	}
	return Decision{Action: Replace, Nodes: nodesOf(), Replacement: &replacement, Price: price, Saving: price - replacement.Price}, nil
}

// withoutLimits is the Provisioners with their limits lifted, or nil when none has any.
func withoutLimits(provisioners []Provisioner) []Provisioner {
	if !slices.ContainsFunc(provisioners, func(p Provisioner) bool { return p.Provisioner.Spec.Limits != nil }) {
		return nil
	}
	out := slices.Clone(provisioners)
	for i := range out {
		if out[i].Provisioner.Spec.Limits != nil {
			p := out[i].Provisioner.DeepCopy()
			p.Spec.Limits = nil
			out[i].Provisioner = p
		}
	}
	return out
}

// cheapestOffering is the price of the instance type's cheapest offering the new node may
// launch as, spot only when asked.
func cheapestOffering(n *scheduling.NewNode, it *cloudprovider.InstanceType, spotOnly bool) (float64, bool) {
	only := *n
	only.InstanceTypes = []*cloudprovider.InstanceType{it}
	for _, c := range provisioning.Candidates(&only) {
		if !spotOnly || c.Offering.CapacityType == v1alpha5.CapacityTypeSpot {
			return c.Offering.Price, true
		}
	}
	return 0, false
}

// multiNode finds the largest prefix of the candidates, two or more within every
// Provisioner's budget, whose removal the scheduler places on the rest and at most one new
// node, by binary search as upstream Karpenter does: simulating every subset is out of reach.
func multiNode(s Snapshot, candidates []*candidate, available map[string]int, settings Settings) Decision {
	left := maps.Clone(available)
	var prefix []*candidate
	for _, c := range candidates {
		if left[c.provisioner] > 0 {
			left[c.provisioner]--
			prefix = append(prefix, c)
		}
	}
	best := Decision{}
	// sort.Search finds the first size that fails, assuming larger prefixes fail once one
	// does; the best success seen is kept.
	sort.Search(len(prefix)+1, func(size int) bool {
		if size < 2 {
			return false
		}
		d, why := simulate(s, prefix[:size], settings)
		if why != nil {
			return true
		}
		if d.Saving > best.Saving {
			best = d
		}
		return false
	})
	return best
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
