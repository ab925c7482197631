// Package disruption removes NodePools' nodes Karpenter no longer wants, one pass at a time,
// in upstream's order: empty consolidatable nodes are deleted, drifted nodes are replaced —
// their pods' room launched first as NodeClaims through the one launcher, the node deleted once
// those are initialized — and underutilized nodes are deleted or replaced by a cheaper node
// (consolidate.go), all within the NodePools' disruption budgets, and never a node a
// do-not-disrupt annotation or a PodDisruptionBudget holds. It decides with pkg/disruption on the
// one cluster state; each node it leaves is told why, once per cause. The same pass then runs
// v1alpha5 Provisioners' methods — ttlSecondsAfterEmpty, ttlSecondsUntilExpired, consolidation
// (provisioners.go) — on the same snapshot, unless a method before acted. A node whose instance an
// interruption takes away at a known time ahead is replaced before it, unbudgeted
// (interrupted.go).
package disruption

import (
	"cmp"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"
	"karpenter.sh/karpenter/pkg/controllers/periodic"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/state"
)

// Name identifies the controller.
const Name = "disruption"

// Defaults when none are configured.
const (
	// DefaultPeriod is how often a pass runs.
	DefaultPeriod = 10 * time.Second
	// DefaultValidationDelay is how long a node must stay a method's candidate before the method
	// acts on it, as upstream's 15 s: churn in a rollout (a pod leaving and another arriving)
	// does not trigger it.
	DefaultValidationDelay = 15 * time.Second
)

// Event reasons of the actions, documented in docs/disruption.md; why a node is kept are the
// disruption.Blocked* reasons.
const (
	ReasonDisrupting        = "DisruptionTerminating"
	ReasonReplacing         = "DisruptionLaunchingReplacement"
	ReasonRolledBack        = "DisruptionRolledBack"
	ReasonPodsFitNowhere    = "DisruptionPodsFitNowhere"
	ReasonInvalidAnnotation = "InvalidDoNotDisruptAnnotation"
	ReasonBudgetUnreadable  = "DisruptionBudgetUnreadable"
)

var (
	allowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "allowed_disruptions",
		Help: "How many more of a NodePool's nodes its budgets allow disrupted now, by nodepool and reason (Empty, Drifted, Underutilized).",
	}, []string{metrics.NodePoolLabel, metrics.ReasonLabel})
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decisions_total",
		Help: "Disruption decisions taken, by decision (delete, replace), reason (empty, drifted, underutilized) and consolidation_type (empty, single, multi; none for drift); a replacement is counted when it launches.",
	}, []string{"decision", metrics.ReasonLabel, "consolidation_type"})
	eligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "eligible_nodes",
		Help: "Nodes the last pass found a method wanted, taken or not, by reason (empty, drifted, underutilized).",
	}, []string{metrics.ReasonLabel})
)

func init() {
	crmetrics.Registry.MustRegister(allowedDisruptions, decisionsTotal, eligibleNodes)
}

// Options configure the controller.
type Options struct {
	Client    client.Client
	Instances cloudprovider.InstanceTypeLister
	Recorder  record.EventRecorder
	Clock     clock.Clock
	// Period is how often a pass runs; DefaultPeriod when zero.
	Period time.Duration
	// ValidationDelay is how long a node stays a candidate before it is acted on;
	// DefaultValidationDelay when zero.
	ValidationDelay time.Duration
	// MinValuesPolicy is the controller's --min-values-policy, which replacements are held to.
	MinValuesPolicy scheduling.MinValuesPolicy
	// ConsolidationThreshold is the fraction of the nodes' price replacing underutilized nodes
	// must save where a NodePool sets no spec.disruption.savingsThreshold;
	// disruption.DefaultSavingsThreshold when zero.
	ConsolidationThreshold float64
	// Consolidation bounds the spot replacements of underutilized nodes; MinSpotTypes is
	// disruption.DefaultSpotToSpotMinTypes when zero.
	Consolidation disruption.ConsolidationSettings
	// Ledger counts replacements against the NodePools' limits, shared with the other
	// controllers that launch.
	Ledger *provisioning.Ledger
	// Launcher launches the replacements, shared with the other controllers that launch.
	Launcher *launcher.Launcher
	// Cluster is the cluster state every planning loop reads.
	Cluster *state.Cluster
	// Provisioners are the v1alpha5 Provisioners' methods, run in order after the NodePools'.
	Provisioners []ProvisionerMethod
}

// Controller runs disruption passes.
type Controller struct {
	Options
	mu sync.Mutex
	// seen is, by method, when each NodeClaim first became its candidate: it is acted on once it
	// has been one for the validation delay.
	seen map[string]map[types.UID]time.Time
	// told is the last reason each NodeClaim was told a method's guards keep it, and toldActing
	// the last reason an action on it did not go through, so that each cause is told once.
	told, toldActing map[types.UID]string
	// budgetWarned is the last budget error each NodePool was told.
	budgetWarned map[types.UID]string
	// invalidTold is the unreadable do-not-disrupt value each pod was told of.
	invalidTold map[types.UID]string
	// ranAt is when each Provisioner method last ran.
	ranAt map[string]time.Time
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil || options.Launcher == nil || options.Ledger == nil || options.Cluster == nil {
		return nil, fmt.Errorf("the %s controller needs a client, instance types, a recorder, a clock, the launcher, the ledger and the cluster state", Name)
	}
	options.Period = cmp.Or(options.Period, DefaultPeriod)
	options.ValidationDelay = cmp.Or(options.ValidationDelay, DefaultValidationDelay)
	options.ConsolidationThreshold = cmp.Or(options.ConsolidationThreshold, disruption.DefaultSavingsThreshold)
	options.Consolidation.MinSpotTypes = cmp.Or(options.Consolidation.MinSpotTypes, disruption.DefaultSpotToSpotMinTypes)
	return &Controller{Options: options, seen: map[string]map[types.UID]time.Time{}, told: map[types.UID]string{}, toldActing: map[types.UID]string{},
		budgetWarned: map[types.UID]string{}, invalidTold: map[types.UID]string{}, ranAt: map[string]time.Time{}}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager runs a pass every period on the leader.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return periodic.Add(mgr, &periodic.Loop{Name: Name, Clock: c.Clock, Pass: c.Pass, Period: c.period(), Delayed: true})
}

// Pass reads the cluster, finishes the replacements earlier passes started, decides and acts:
// the NodePools' methods first, then the Provisioners' that are due. Everything it needs is in
// the cluster (the karpenter.sh/disrupted taint, the replacements' karpenter.sh/replaces
// annotation), so a pass after a crash carries on where the last stopped.
func (c *Controller) Pass(ctx context.Context) error {
	ctx = cloudmetrics.WithController(ctx, Name)
	now := c.Clock.Now()
	snapshot := sync.OnceValues(func() (*state.Snapshot, error) { return c.Cluster.Snapshot(ctx, now) })
	acted, err := c.actNodePools(ctx, snapshot, now)
	// A failing NodePool method does not keep the Provisioners' from running: they wait only
	// when something was done.
	return errors.Join(err, c.actProvisioners(ctx, snapshot, acted))
}

// actNodePools runs the NodePools' methods in upstream's order; acted is whether one removed a
// node or a replacement is on its way, which changes what fits where.
func (c *Controller) actNodePools(ctx context.Context, readSnapshot func() (*state.Snapshot, error), now time.Time) (acted bool, err error) {
	var nodePools v1.NodePoolList
	if err := c.Client.List(ctx, &nodePools); err != nil {
		return false, fmt.Errorf("listing nodepools, %w", err)
	}
	if len(nodePools.Items) == 0 {
		return false, nil
	}
	snapshot, err := readSnapshot()
	if err != nil {
		return false, err
	}
	var budgets policyv1.PodDisruptionBudgetList
	if err := c.Client.List(ctx, &budgets); err != nil {
		return false, fmt.Errorf("listing poddisruptionbudgets, %w", err)
	}
	candidates, interrupted := c.splitInterrupted(disruption.Candidates(snapshot, nodePools.Items))
	block := c.blocker(snapshot, budgets.Items, now)
	decision := disruption.Decide(candidates, block, now)
	c.report(decision)
	c.warnBudgets(nodePools.Items, decision.BudgetErrors)
	c.explain(candidates, decision.Blocked)
	loadPools := sync.OnceValues(func() (*replacementPools, error) { return c.readPools(ctx, snapshot, nodePools.Items) })
	// From here on a failure may come after a change to the cluster: acted says so.
	replacing, interruptedActed, err := c.replaceInterrupted(ctx, snapshot, interrupted, now, loadPools)
	if err != nil {
		return true, err
	}
	inFlight, finished, err := c.finish(ctx, snapshot, candidates, block, loadPools)
	if err != nil {
		return true, err
	}
	inFlight, finished = inFlight || replacing, finished || interruptedActed
	empty := c.validated(decision.Empty, "empty", now)
	for _, candidate := range empty {
		if err := c.terminate(ctx, candidate, metrics.ReasonEmpty, "it has been empty for its NodePool's consolidateAfter", decisionDelete); err != nil {
			return true, err
		}
	}
	acted = finished || len(empty) > 0
	moved := false
	for _, candidate := range c.validated(decision.Drifted, "drifted", now) {
		if len(candidate.Pods) > 0 && (inFlight || moved) {
			// One node with pods at a time: the room a replacement brings is its pods', and the
			// room the other nodes have is a deleted node's pods', which the simulation of the
			// next, on the same snapshot, would hand out again.
			break
		}
		launched, err := c.replace(ctx, snapshot, candidate, driftCause(candidate), loadPools)
		inFlight = inFlight || launched
		// Deleted or being replaced, its node is tainted now (nodes.TaintDisrupted updates it).
		acted = acted || nodes.IsDisrupted(candidate.Node)
		moved = moved || len(candidate.Pods) > 0 && nodes.IsDisrupted(candidate.Node)
		if err != nil {
			return acted || inFlight, err
		}
	}
	underutilized := c.validated(decision.Underutilized, "underutilized", now)
	if acted || inFlight {
		// The nodes this pass removes, or a replacement on its way, change what fits where: the
		// next pass consolidates on the cluster they leave.
		return true, nil
	}
	return c.consolidate(ctx, snapshot, underutilized, loadPools)
}

// blocker is disruption.Block for the pass, asked once per candidate: a pod whose
// do-not-disrupt annotation cannot be read gets a Warning Event, once per value.
func (c *Controller) blocker(snapshot *state.Snapshot, budgets []policyv1.PodDisruptionBudget, now time.Time) func(*disruption.Candidate) *disruption.Blocked {
	c.mu.Lock()
	live := map[types.UID]bool{}
	for i := range snapshot.Pods {
		live[snapshot.Pods[i].UID] = true
	}
	for uid := range c.invalidTold {
		if !live[uid] {
			delete(c.invalidTold, uid)
		}
	}
	c.mu.Unlock()
	asked := map[*disruption.Candidate]*disruption.Blocked{}
	return func(candidate *disruption.Candidate) *disruption.Blocked {
		if blocked, ok := asked[candidate]; ok {
			return blocked
		}
		blocked, invalid := disruption.Block(candidate, budgets, now)
		asked[candidate] = blocked
		c.mu.Lock()
		defer c.mu.Unlock()
		for pod, err := range invalid {
			if value := pod.Annotations[v1.DoNotDisruptAnnotationKey]; c.invalidTold[pod.UID] != value {
				c.invalidTold[pod.UID] = value
				c.Recorder.Event(pod, corev1.EventTypeWarning, ReasonInvalidAnnotation, err.Error())
			}
		}
		return blocked
	}
}

// report sets the budget and eligibility gauges.
func (c *Controller) report(decision disruption.Decision) {
	allowedDisruptions.Reset()
	for nodePool, byReason := range decision.Allowed {
		for reason, n := range byReason {
			allowedDisruptions.WithLabelValues(nodePool, string(reason)).Set(float64(n))
		}
	}
	for _, reason := range []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized} {
		eligibleNodes.WithLabelValues(strings.ToLower(string(reason))).Set(float64(decision.Eligible[reason]))
	}
}

// warnBudgets tells a NodePool whose budgets cannot be read (a time zone the image does not
// know) that they allow nothing, once per error.
func (c *Controller) warnBudgets(nodePools []v1.NodePool, errs map[string]error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range nodePools {
		np := &nodePools[i]
		err, ok := errs[np.Name]
		if !ok {
			delete(c.budgetWarned, np.UID)
			continue
		}
		if c.budgetWarned[np.UID] == err.Error() {
			continue
		}
		c.budgetWarned[np.UID] = err.Error()
		c.Recorder.Eventf(np, corev1.EventTypeWarning, ReasonBudgetUnreadable, "Disruption budgets allow nothing until fixed: %v", err)
	}
}

// validated are the candidates that have been a method's for the validation delay; the others
// are remembered from now. Candidates no longer the method's are forgotten.
func (c *Controller) validated(candidates []*disruption.Candidate, method string, now time.Time) []*disruption.Candidate {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[types.UID]time.Time{}
	var out []*disruption.Candidate
	for _, candidate := range candidates {
		uid := candidate.NodeClaim.UID
		first, ok := c.seen[method][uid]
		if !ok {
			first = now
		}
		seen[uid] = first
		if now.Sub(first) >= c.ValidationDelay {
			out = append(out, candidate)
		}
	}
	c.seen[method] = seen
	return out
}

// explain tells each NodeClaim and node a method wanted and did not take why, once per cause.
func (c *Controller) explain(candidates []*disruption.Candidate, blocked map[string]disruption.Blocked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[types.UID]bool{}
	for _, candidate := range candidates {
		uid := candidate.NodeClaim.UID
		seen[uid] = true
		why, ok := blocked[candidate.Name()]
		if !ok {
			delete(c.told, uid)
			continue
		}
		if c.told[uid] == why.Reason {
			continue
		}
		c.told[uid] = why.Reason
		c.Recorder.Event(candidate.NodeClaim, corev1.EventTypeNormal, why.Reason, "Not disrupted: "+why.Message)
		if candidate.Node != nil {
			c.Recorder.Event(candidate.Node, corev1.EventTypeNormal, why.Reason, "Not disrupted: "+why.Message)
		}
	}
	for _, told := range []map[types.UID]string{c.told, c.toldActing} {
		for uid := range told {
			if !seen[uid] {
				delete(told, uid)
			}
		}
	}
}

// Decisions, the decision label of karpenter_voluntary_disruption_decisions_total: counted once,
// when taken — a replacement when it launches, not again when its nodes go.
const (
	decisionDelete  = "delete"
	decisionReplace = "replace"
)

// countDecision counts a decision on nodes nodes for the reason, with upstream's consolidation
// type: empty for emptiness, single or multi for underutilized nodes, none for drift.
func countDecision(decision, reason string, nodes int) {
	consolidationType := ""
	switch {
	case reason == metrics.ReasonEmpty:
		consolidationType = "empty"
	case reason == metrics.ReasonUnderutilized && nodes > 1:
		consolidationType = "multi"
	case reason == metrics.ReasonUnderutilized:
		consolidationType = "single"
	}
	decisionsTotal.WithLabelValues(decision, reason, consolidationType).Inc()
}

// terminate taints the candidate's node disrupted, so nothing is scheduled there meanwhile,
// and deletes its NodeClaim: the termination drains the node and terminates its instance. A
// decision, when not empty, is counted.
func (c *Controller) terminate(ctx context.Context, candidate *disruption.Candidate, reason, why, decision string) error {
	if candidate.Node != nil {
		if err := nodes.TaintDisrupted(ctx, c.Client, candidate.Node); err != nil {
			return err
		}
	}
	nc := candidate.NodeClaim
	if err := c.Client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s, %w", nc.Name, err))
	}
	metrics.NodeClaimDisrupted(nc, reason)
	if decision != "" {
		countDecision(decision, reason, 1)
	}
	message := fmt.Sprintf("Disrupting: %s (%s)", why, reason)
	c.Recorder.Event(nc, corev1.EventTypeNormal, ReasonDisrupting, message)
	if candidate.Node != nil {
		c.Recorder.Event(candidate.Node, corev1.EventTypeNormal, ReasonDisrupting, message)
	}
	log.FromContext(ctx).Info("disrupting a nodeclaim", "nodeclaim", nc.Name, "reason", reason)
	return nil
}

// replacementsOf are the NodeClaims launched to replace the node, not being deleted.
func replacementsOf(snapshot *state.Snapshot, node string) []*v1.NodeClaim {
	var out []*v1.NodeClaim
	for i := range snapshot.NodeClaims {
		nc := &snapshot.NodeClaims[i]
		if nc.DeletionTimestamp == nil && slices.Contains(strings.Split(nc.Annotations[v1alpha5.ReplacesAnnotationKey], ","), node) {
			out = append(out, nc)
		}
	}
	return out
}
