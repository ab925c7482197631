package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/state"
)

// consolidate removes underutilized nodes, the last method: the scheduler simulates removing
// each candidate alone and the largest prefix of them together, their pods moved to the other
// nodes and cheaper new ones (one for one node, fewer for several), and the consolidation saving
// most is taken: deleted when the pods fit on the other nodes, otherwise the new nodes launched
// first (annotated with the nodes they replace) and the nodes deleted once all are initialized
// (finish). It waits while
// the cluster is settling (a node launching or draining, pods waiting for capacity), as what
// fits where changes when that is done. Each candidate kept is told why, once per cause. acted
// is whether it deleted or launched.
func (c *Controller) consolidate(ctx context.Context, snapshot *state.Snapshot, candidates []*disruption.Candidate, loadPools func() (*replacementPools, error)) (acted bool, err error) {
	if len(candidates) == 0 {
		return false, nil
	}
	loaded, err := loadPools()
	if err != nil {
		return false, err
	}
	decision := disruption.ConsolidateUnderutilized(snapshot, candidates, loaded.planned, c.ConsolidationThreshold, c.Consolidation)
	if decision.Unsettled != "" {
		log.FromContext(ctx).V(1).Info("not consolidating while the cluster settles", "why", decision.Unsettled)
		return false, nil
	}
	byNode := map[string]*disruption.Candidate{}
	for _, candidate := range candidates {
		byNode[candidate.Node.Name] = candidate
	}
	for node, why := range decision.Kept {
		c.tell(byNode[node], why.Reason, "Not disrupted: "+why.Message)
	}
	best := decision.Consolidation
	if len(best.Removed) == 0 {
		return false, nil
	}
	chosen := make([]*disruption.Candidate, 0, len(best.Removed))
	for _, removal := range best.Removed {
		chosen = append(chosen, byNode[removal.Node.Name])
	}
	if len(best.Replacements) == 0 {
		// Every node is tainted before any is deleted: a pod evicted from one must not be
		// scheduled onto another waiting for its drain.
		for i, candidate := range chosen {
			if err := nodes.TaintDisrupted(ctx, c.Client, candidate.Node); err != nil {
				return false, errors.Join(err, c.rollBackAll(ctx, chosen[:i], "another node of its decision changed since the pass read it"))
			}
		}
		for _, candidate := range chosen {
			c.acted(candidate)
			why := fmt.Sprintf("it is underutilized: its pods fit on the other nodes, saving $%.4f/h", best.Saving)
			if len(chosen) > 1 {
				why = fmt.Sprintf("it is underutilized: the pods of it and %d more fit on the other nodes, saving $%.4f/h in all", len(chosen)-1, best.Saving)
			}
			if err := c.terminate(ctx, candidate, metrics.ReasonUnderutilized, why, ""); err != nil {
				return true, err
			}
		}
		// One decision, however many nodes it removes.
		countDecision(decisionDelete, metrics.ReasonUnderutilized, len(chosen))
		return true, nil
	}
	return c.replaceUnderutilized(ctx, chosen, best, loaded)
}

// replaceUnderutilized taints the nodes disrupted and launches their cheaper replacements,
// annotated with their names (and how many replace them); finish deletes them once every
// replacement is initialized. A launch that fails is rolled back at once: the replacements
// launched before it are deleted and the nodes untainted, unless one runs and is not read yet
// (launcher.LaunchInProgressError). acted is whether it launched them all.
func (c *Controller) replaceUnderutilized(ctx context.Context, chosen []*disruption.Candidate, best disruption.Consolidation, loaded *replacementPools) (acted bool, err error) {
	for _, replacement := range best.Replacements {
		if _, ok := loaded.launchers[replacement.Pool]; !ok {
			return false, fmt.Errorf("the replacement's %s is gone", replacement.Pool)
		}
	}
	names, uids := make([]string, 0, len(chosen)), make([]string, 0, len(chosen))
	for i, candidate := range chosen {
		if err := nodes.TaintDisrupted(ctx, c.Client, candidate.Node); err != nil {
			return false, errors.Join(err, c.rollBackAll(ctx, chosen[:i], "another node of its decision changed since the pass read it"))
		}
		names = append(names, candidate.Node.Name)
		uids = append(uids, string(candidate.NodeClaim.UID))
	}
	slices.Sort(uids)
	nodeClaims, err := provisioning.LaunchReplacements(ctx, c.Launcher, c.Client, best.Replacements,
		func(replacement *scheduling.NewNode) (launcher.Pool, map[string]corev1.ResourceList) {
			return loaded.launchers[replacement.Pool], loaded.counted[replacement.Pool]
		},
		provisioning.Consolidation{Replaced: names, ReplacedUIDs: uids, Ledger: c.Ledger, Reason: metrics.ReasonUnderutilized,
			Annotations: map[string]string{v1.DisruptionReasonAnnotationKey: metrics.ReasonUnderutilized}})
	if inProgress := (*launcher.LaunchInProgressError)(nil); errors.As(err, &inProgress) {
		// A replacement runs and is not read yet: the nodes stay tainted, and finish waits for
		// their replacements (withdrawing them should fewer than the decision's be launched).
		return false, err
	}
	if err != nil {
		return false, c.rollBackReplacement(ctx, chosen, err)
	}
	launched := make([]string, 0, len(nodeClaims))
	for _, nc := range nodeClaims {
		launched = append(launched, fmt.Sprintf("%s (%s, %s)", nc.NodeClaim.Name, nc.NodeClaim.Labels[corev1.LabelInstanceTypeStable], nc.NodeClaim.Labels[v1alpha5.CapacityTypeLabelKey]))
	}
	countDecision(decisionReplace, metrics.ReasonUnderutilized, len(chosen))
	message := fmt.Sprintf("Disrupting: it is underutilized; launched %s to replace it, saving $%.4f/h; the node is deleted once every replacement is initialized",
		strings.Join(launched, ", "), best.Saving)
	for _, candidate := range chosen {
		c.acted(candidate)
		c.Recorder.Event(candidate.NodeClaim, corev1.EventTypeNormal, ReasonReplacing, message)
		c.Recorder.Event(candidate.Node, corev1.EventTypeNormal, ReasonReplacing, message)
	}
	log.FromContext(ctx).Info("launched cheaper replacements for underutilized nodeclaims", "replacements", launched, "replaces", names, "saving", best.Saving)
	return true, nil
}

// rollBackAll rolls the disruption of every candidate back.
func (c *Controller) rollBackAll(ctx context.Context, candidates []*disruption.Candidate, why string) error {
	var errs []error
	for _, candidate := range candidates {
		errs = append(errs, c.rollBack(ctx, candidate, why))
	}
	return errors.Join(errs...)
}

// rollBackReplacement untaints the nodes whose replacements failed to launch (LaunchReplacements
// withdrew those launched), telling each why; a launch refused by the limits is no error: the
// next pass decides again.
func (c *Controller) rollBackReplacement(ctx context.Context, chosen []*disruption.Candidate, launchErr error) error {
	var errs []error
	for _, candidate := range chosen {
		if err := nodes.UntaintDisrupted(ctx, c.Client, candidate.Node); err != nil {
			errs = append(errs, err)
			continue
		}
		// Told once per cause, not at every pass the launch fails again.
		c.tell(candidate, ReasonRolledBack, fmt.Sprintf("Disruption rolled back: launching its cheaper replacement failed, %v", launchErr))
	}
	if limited := (*provisioning.LimitExceededError)(nil); !errors.As(launchErr, &limited) {
		errs = append(errs, launchErr)
	}
	return errors.Join(errs...)
}
