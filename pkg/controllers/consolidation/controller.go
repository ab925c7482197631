// Package consolidation is the reallocator: a method of the disruption controller's pass
// (disruption.ProvisionerMethod), run every --consolidation-period, that deletes the nodes of
// Provisioners with spec.consolidation.enabled whose pods fit on the other nodes, and replaces
// nodes with a cheaper one, deciding with the provisioning scheduler on the pass's snapshot
// (Decide) and explaining on each node it leaves why.
package consolidation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/overlay"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// Name identifies the method.
const Name = "consolidation"

// Defaults when none are configured.
const (
	// DefaultPeriod is how often a pass runs: slow on purpose, cost moves in hours.
	DefaultPeriod = 30 * time.Second
	// DefaultMinNodeAge keeps a node that just joined from being judged on a workload still
	// moving onto it.
	DefaultMinNodeAge = 5 * time.Minute
)

// Event reasons of the actions, documented in docs/node-lifecycle.md; the reasons a node is
// kept are the Reason constants.
const (
	ReasonDeleted   = "ConsolidationDeleted"
	ReasonReplacing = "ConsolidationReplacing"
	// ReasonRolledBack is on a node tainted for deletion and then kept.
	ReasonRolledBack = "ConsolidationRolledBack"
)

var (
	actionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "actions_total",
		Help: "Consolidation actions taken, by action: delete, replace.",
	}, []string{"action"})
	savingsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "savings_dollars_per_hour_total",
		Help: "Hourly price taken off the cluster by consolidation actions, by action: delete, replace.",
	}, []string{"action"})
	skippedNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "skipped_nodes",
		Help: "Nodes the last pass considered and did not consolidate, by reason.",
	}, []string{"reason"})
	passDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "pass_duration_seconds",
		Help:    "Duration of one consolidation pass: reading the cluster and deciding, actions excluded.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})
)

func init() {
	crmetrics.Registry.MustRegister(actionsTotal, savingsTotal, skippedNodes, passDuration)
}

// Options configure the controller.
type Options struct {
	Client    client.Client
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	Clock     clock.Clock
	// Period is how often a pass runs; DefaultPeriod when zero.
	Period time.Duration
	// Settings bound the actions; zero fields take the defaults above.
	Settings Settings
	// Ledger counts replacements against the Provisioners' limits, shared with the other
	// controllers that launch.
	Ledger *provisioning.Ledger
	// Launcher launches the replacements, shared with the other controllers that launch.
	Launcher *launcher.Launcher
}

// Method runs consolidation passes.
type Method struct {
	client    client.Client
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.Clock
	period    time.Duration
	settings  Settings
	ledger    *provisioning.Ledger
	launcher  *launcher.Launcher
	// explained is the last reason told on each node, so that each cause is told once.
	mu        sync.Mutex
	explained map[types.UID]string
	expected  Expectations
}

// New builds the method.
func New(options Options) (*Method, error) {
	if options.Client == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil || options.Ledger == nil || options.Launcher == nil {
		return nil, fmt.Errorf("the %s method needs a client, an instance provider, a recorder, a clock, the ledger and the launcher", Name)
	}
	if options.Period <= 0 {
		options.Period = DefaultPeriod
	}
	if options.Settings.MinNodeAge <= 0 {
		options.Settings.MinNodeAge = DefaultMinNodeAge
	}
	if options.Settings.Threshold <= 0 {
		options.Settings.Threshold = disruption.DefaultSavingsThreshold
	}
	if options.Settings.MinSpotTypes <= 0 {
		options.Settings.MinSpotTypes = disruption.DefaultSpotToSpotMinTypes
	}
	return &Method{client: options.Client, instances: options.Instances, recorder: options.Recorder, clock: options.Clock,
		period: options.Period, settings: options.Settings, ledger: options.Ledger, launcher: options.Launcher, explained: map[types.UID]string{}}, nil
}

// Name identifies the method.
func (c *Method) Name() string { return Name }

// Period is how often it runs at most.
func (c *Method) Period() time.Duration { return c.period }

// Act decides on the pass's snapshot and acts; acted is whether it deleted or launched.
// Everything it needs to know is in the cluster, so a pass after a crash carries on: a
// replacement launched before it is Ready, and the next pass finds the old node's pods fit on
// it and deletes the old node.
func (c *Method) Act(ctx context.Context, cluster func() (*state.Snapshot, error)) (acted bool, err error) {
	ctx = cloudmetrics.WithController(ctx, Name)
	started := c.clock.Now()
	// Without a Provisioner that opts in, a pass costs one list of Provisioners, not a copy of
	// every pod and node of the cluster.
	var provisionerList v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisionerList); err != nil {
		return false, fmt.Errorf("listing provisioners, %w", err)
	}
	if len(provisionerList.Items) == 0 {
		return false, nil
	}
	if err := c.rollBackInterrupted(ctx); err != nil {
		return false, err
	}
	if !slices.ContainsFunc(provisionerList.Items, func(p v1alpha5.Provisioner) bool { return p.DeletionTimestamp == nil && p.ConsolidationEnabled() }) {
		return false, nil
	}
	clusterSnapshot, err := cluster()
	if err != nil {
		return false, err
	}
	snapshot, provisioners, err := Read(ctx, c.client, clusterSnapshot, c.instances, c.ledger)
	if err != nil {
		return false, err
	}
	if !c.expected.Met(snapshot) {
		return false, nil
	}
	decision := Decide(*snapshot, c.settings)
	passDuration.Observe(c.clock.Since(started).Seconds())
	c.explain(snapshot, decision)
	switch decision.Action {
	case Delete:
		return true, c.delete(ctx, decision)
	case Replace:
		return true, c.replace(ctx, decision, provisioners, snapshot.Counted)
	}
	return false, nil
}

// Read takes the snapshot a pass decides on from the cluster's state, and the Provisioners by
// name: the cluster's Provisioners with their instance types, the nodes with their pods (and
// CSINodes) as the state gives them room (nominated pods and launching nodes included) and
// those being deleted with their bound pods, PodDisruptionBudgets, and the question every
// planner asks the scheduler (state.Question), the cluster's NodeOverlays applied to the
// instance types (state.Snapshot.AddInstanceTypes). What counts against each Provisioner's
// limits is the ledger's, launches in flight included, never a status that may lag. Node expiry
// decides on the same snapshot.
func Read(ctx context.Context, reader client.Reader, cluster *state.Snapshot, instances cloudprovider.InstanceTypeLister, ledger *provisioning.Ledger) (*Snapshot, map[string]*v1alpha5.Provisioner, error) {
	var provisionerList v1alpha5.ProvisionerList
	if err := reader.List(ctx, &provisionerList); err != nil {
		return nil, nil, fmt.Errorf("listing provisioners, %w", err)
	}
	byName := map[string]*v1alpha5.Provisioner{}
	snapshot := &Snapshot{Now: cluster.Now, Counted: map[string]map[string]corev1.ResourceList{}}
	var overlayInputs []overlay.Pool
	for i := range provisionerList.Items {
		p := &provisionerList.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		types, err := instances.InstanceTypes(ctx, provisioning.Constraints(p))
		if err != nil {
			return nil, nil, fmt.Errorf("listing the instance types of provisioner %s, %w", p.Name, err)
		}
		byName[p.Name] = p
		overlayInputs = append(overlayInputs, provisioning.OverlayPool(p, types))
	}
	overlaid, _ := cluster.AddInstanceTypes(overlayInputs)
	all := cluster.AllNodes()
	for _, pool := range overlayInputs {
		p := byName[pool.Key.Name]
		snapshot.Counted[p.Name] = provisioning.Counted(all, pool.Key, cluster.InstanceTypes)
		limited := p.DeepCopy()
		limited.Status.Resources = ledger.Used(pool.Key, snapshot.Counted[p.Name])
		snapshot.Provisioners = append(snapshot.Provisioners, Provisioner{Provisioner: limited, InstanceTypes: overlaid[pool.Key]})
	}
	var budgets policyv1.PodDisruptionBudgetList
	if err := reader.List(ctx, &budgets); err != nil {
		return nil, nil, fmt.Errorf("listing poddisruptionbudgets, %w", err)
	}
	snapshot.Budgets = budgets.Items
	snapshot.Question = cluster.Question()
	snapshot.Nodes = append(cluster.Room(), deleting(cluster)...)
	for i := range all {
		if node := &all[i]; node.DeletionTimestamp == nil && (nodes.IsLaunching(node) || nodes.HasConditionTaint(node)) {
			snapshot.Settling = append(snapshot.Settling, node)
		}
	}
	snapshot.Pending = snapshot.servable(cluster.Pending())
	return snapshot, byName, nil
}

// deleting are the nodes being deleted, with the pods still bound to them: they take no pods,
// but count against their Provisioner's disruption budget.
func deleting(cluster *state.Snapshot) []scheduling.Node {
	var out []scheduling.Node
	for i := range cluster.Nodes {
		node := &cluster.Nodes[i]
		if node.DeletionTimestamp == nil {
			continue
		}
		var bound []*corev1.Pod
		for j := range cluster.Pods {
			if pod := &cluster.Pods[j]; pod.Spec.NodeName == node.Name && !pods.IsTerminal(pod) {
				bound = append(bound, pod)
			}
		}
		out = append(out, scheduling.Node{Node: node, Pods: bound})
	}
	return out
}

// servable counts the pending pods some Provisioner could serve now, on a node there is or on
// one it would launch. A pod none could (a typo in its node selector, a zone no Provisioner
// offers, past every limit) waits until someone changes it, and must not hold expiry and
// consolidation back for the whole cluster meanwhile.
func (s *Snapshot) servable(pending []*corev1.Pod) int {
	if len(pending) == 0 {
		return 0
	}
	return len(pending) - len(scheduling.Schedule(s.Input(pending, s.Provisioners, nil)).Unschedulable)
}

// explain tells each node the pass kept why, once per cause, and counts the reasons.
func (c *Method) explain(snapshot *Snapshot, decision Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	skippedNodes.Reset()
	seen := map[types.UID]bool{}
	for _, n := range snapshot.Nodes {
		node := n.Node
		seen[node.UID] = true
		why, ok := decision.Skipped[node.Name]
		if !ok {
			// A reason that went away may come back: it is told again then.
			delete(c.explained, node.UID)
			continue
		}
		skippedNodes.WithLabelValues(string(why.Reason)).Inc()
		if c.explained[node.UID] != why.Reason {
			c.explained[node.UID] = why.Reason
			c.recorder.Event(node, corev1.EventTypeNormal, string(why.Reason), "Not consolidated: "+why.Message)
		}
	}
	for uid := range c.explained {
		if !seen[uid] {
			delete(c.explained, uid)
		}
	}
}

// deletedMessage is the Event on each node a Delete without replacement removed. The saving
// is the action's where it removed several: where their pods fit was decided together.
func deletedMessage(decision Decision) string {
	if len(decision.Nodes) == 1 {
		return fmt.Sprintf("Consolidation deleted the node: its pods fit on the other nodes, saving $%.4f/h", decision.Saving)
	}
	return fmt.Sprintf("Consolidation deleted the node and %d more together: their pods fit on the remaining nodes, saving $%.4f/h in all", len(decision.Nodes)-1, decision.Saving)
}

// delete removes the decision's nodes; their finalizer drains them through the eviction API.
// Every node is tainted disrupted before any is deleted: the termination cordons a node only as
// it drains it, so a pod evicted from one node of the decision could otherwise be scheduled onto
// another still waiting for its drain, and be evicted twice. The taint carries the snapshot's
// resourceVersion, so a node changed since (cordoned, say) refuses it and the decision is
// rolled back: the next pass decides again. A node whose deletion fails is untainted: the
// others' pods fit without it gone, as they fitted without it.
func (c *Method) delete(ctx context.Context, decision Decision) error {
	tainted := make([]*corev1.Node, 0, len(decision.Nodes))
	for _, node := range decision.Nodes {
		if err := nodes.TaintDisrupted(ctx, c.client, node); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return errors.Join(err, c.rollBack(ctx, tainted, "another node of its decision changed since the pass read it"))
		}
		tainted = append(tainted, node)
	}
	var errs []error
	var kept []*corev1.Node
	for _, node := range tainted {
		if err := c.client.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting node %s, %w", node.Name, err))
				kept = append(kept, node)
			}
			continue
		}
		metrics.NodeClaimDisrupted(node, metrics.ReasonUnderutilized)
		c.expected.Deleted(node.Name, c.clock.Now())
		if decision.ReplacedBy != "" {
			c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonDeleted, "Consolidation deleted the node: its replacement %s is Ready", decision.ReplacedBy)
			continue
		}
		c.recorder.Event(node, corev1.EventTypeNormal, ReasonDeleted, deletedMessage(decision))
	}
	if len(kept) > 0 {
		errs = append(errs, c.rollBack(ctx, kept, "deleting it failed"))
	}
	// A replacement's action and saving were counted when it launched.
	if len(errs) == 0 && decision.ReplacedBy == "" {
		actionsTotal.WithLabelValues(string(Delete)).Inc()
		savingsTotal.WithLabelValues(string(Delete)).Add(decision.Saving)
	}
	log.FromContext(ctx).Info("consolidation deleted nodes", "nodes", len(decision.Nodes), "saving", decision.Saving, "replacedBy", decision.ReplacedBy)
	return errors.Join(errs...)
}

// rollBack lifts the disrupted taint of nodes the pass no longer removes, telling each why.
func (c *Method) rollBack(ctx context.Context, tainted []*corev1.Node, why string) error {
	var errs []error
	for _, node := range tainted {
		if err := nodes.UntaintDisrupted(ctx, c.client, node); err != nil {
			errs = append(errs, err)
			continue
		}
		c.recorder.Event(node, corev1.EventTypeNormal, ReasonRolledBack, "Consolidation rolled back: "+why)
	}
	return errors.Join(errs...)
}

// rollBackInterrupted lifts the disrupted taint a crash left between delete's taints and its
// deletions: a Provisioner's node carries it only within one pass, so one tainted and not being
// deleted is no longer removed by anyone. It runs whether or not a Provisioner still opts in.
func (c *Method) rollBackInterrupted(ctx context.Context) error {
	var list corev1.NodeList
	if err := c.client.List(ctx, &list, client.HasLabels{v1alpha5.ProvisionerNameLabelKey}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the provisioners' nodes, %w", err)
	}
	var left []*corev1.Node
	for i := range list.Items {
		if node := &list.Items[i]; node.DeletionTimestamp == nil && nodes.IsDisrupted(node) {
			left = append(left, node.DeepCopy())
		}
	}
	return c.rollBack(ctx, left, "the pass that tainted it stopped before deleting it")
}

// replace launches the cheaper nodes through the provisioning path, each annotated with the
// nodes they replace (and how many replace them). The old nodes stay until every replacement is
// Ready: until then passes find the cluster unsettled, and the first pass after, in this
// controller or a restarted one, deletes them once their pods fit without new nodes. When one
// fails to launch, those launched before it are deleted: the old nodes' pods do not fit without
// it. (A crash in between leaves them, empty, for a later pass to remove.)
func (c *Method) replace(ctx context.Context, decision Decision, provisioners map[string]*v1alpha5.Provisioner, counted map[string]map[string]corev1.ResourceList) error {
	for _, replacement := range decision.Replacements {
		if provisioners[replacement.Pool.Name] == nil {
			return fmt.Errorf("the replacement's provisioner %s is gone", replacement.Pool.Name)
		}
	}
	names := make([]string, 0, len(decision.Nodes))
	uids := make([]string, 0, len(decision.Nodes))
	for _, old := range decision.Nodes {
		names = append(names, old.Name)
		uids = append(uids, string(old.UID))
	}
	slices.Sort(uids)
	nodes, err := provisioning.LaunchReplacements(ctx, c.launcher, c.client, decision.Replacements,
		func(replacement *scheduling.NewNode) (launcher.Pool, map[string]corev1.ResourceList) {
			return launcher.Pool{Provisioner: provisioners[replacement.Pool.Name]}, counted[replacement.Pool.Name]
		},
		provisioning.Consolidation{Replaced: names, ReplacedUIDs: uids, Ledger: c.ledger, Reason: metrics.ReasonUnderutilized})
	if exceeded := (*provisioning.LimitExceededError)(nil); errors.As(err, &exceeded) {
		// Another launch took the room since the snapshot: the next pass decides again.
		for _, old := range decision.Nodes {
			c.recorder.Eventf(old, corev1.EventTypeNormal, disruption.ConsolidationLimits, "Not consolidated: its replacement would exceed spec.limits, %v", exceeded)
		}
	}
	if err != nil {
		return err
	}
	launched := make([]string, 0, len(nodes))
	for _, node := range nodes {
		c.expected.Launched(c.clock.Now(), node.NodeName, node.NodeClaim.Name)
		launched = append(launched, fmt.Sprintf("%s (%s, %s)", node.NodeName, node.NodeClaim.Labels[corev1.LabelInstanceTypeStable], node.NodeClaim.Labels[v1alpha5.CapacityTypeLabelKey]))
	}
	actionsTotal.WithLabelValues(string(Replace)).Inc()
	savingsTotal.WithLabelValues(string(Replace)).Add(decision.Saving)
	for _, old := range decision.Nodes {
		c.recorder.Eventf(old, corev1.EventTypeNormal, ReasonReplacing, "Consolidation launched %s to replace this node, saving $%.4f/h; the node is deleted once every replacement is Ready",
			strings.Join(launched, ", "), decision.Saving)
	}
	log.FromContext(ctx).Info("consolidation launched replacements", "nodes", launched, "replaces", len(decision.Nodes), "saving", decision.Saving)
	return nil
}
