package disruption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/state"
)

// ReasonInterruptionUnreadable is the Event reason on a NodeClaim whose recorded interruption
// cannot be read: it is disrupted as any other NodeClaim.
const ReasonInterruptionUnreadable = "InterruptionUnreadable"

// splitInterrupted takes the NodeClaims an interruption was recorded on out of the candidates:
// they are replaced ahead of it (replaceInterrupted), whatever the budgets and do-not-disrupt say,
// and no other method counts or takes them.
func (c *Controller) splitInterrupted(candidates []*disruption.Candidate) (rest []*disruption.Candidate, interrupted map[*disruption.Candidate]disruption.Interruption) {
	interrupted = map[*disruption.Candidate]disruption.Interruption{}
	for _, candidate := range candidates {
		in, ok, err := disruption.InterruptionOf(candidate.NodeClaim)
		if err != nil {
			c.tell(candidate, ReasonInterruptionUnreadable, err.Error())
		}
		if !ok || candidate.NodeClaim.DeletionTimestamp != nil {
			rest = append(rest, candidate)
			continue
		}
		interrupted[candidate] = in
	}
	return rest, interrupted
}

// replaceInterrupted carries each interrupted NodeClaim towards its removal: its node is replaced
// (tainted, the room its pods need launched), then deleted once the replacements are initialized
// or when its drain must start before the interruption (DrainBy), whichever comes first; a
// NodeClaim whose node has not registered yet goes by that time too. inFlight is true while a
// replacement is on its way, acted when a node was deleted or tainted.
func (c *Controller) replaceInterrupted(ctx context.Context, snapshot *state.Snapshot, interrupted map[*disruption.Candidate]disruption.Interruption, now time.Time,
	loadPools func() (*replacementPools, error)) (inFlight, acted bool, err error) {
	candidates := slices.Collect(maps.Keys(interrupted))
	slices.SortFunc(candidates, func(a, b *disruption.Candidate) int {
		return a.NodeClaim.CreationTimestamp.Compare(b.NodeClaim.CreationTimestamp.Time)
	})
	for _, candidate := range candidates {
		in := interrupted[candidate]
		starts := in.Deadline.UTC().Format(time.RFC3339)
		if drainBy := in.DrainBy(candidate.NodeClaim); !now.Before(drainBy) {
			if err := c.terminate(ctx, candidate, in.Reason, fmt.Sprintf("its instance is interrupted at %s (%s) and its drain must start now, replaced or not", starts, in.Reason), ""); err != nil {
				return inFlight, acted, err
			}
			acted = true
			continue
		}
		if candidate.Node == nil {
			continue
		}
		if replacements := replacementsOf(snapshot, candidate.Node.Name); len(replacements) > 0 {
			if slices.ContainsFunc(replacements, func(nc *v1.NodeClaim) bool { return !nc.IsTrue(v1.ConditionTypeInitialized) }) {
				inFlight = true
				continue
			}
			why := fmt.Sprintf("its replacements %s are initialized, ahead of its instance's interruption at %s (%s)", names(replacements), starts, in.Reason)
			if err := c.terminate(ctx, candidate, in.Reason, why, ""); err != nil {
				return inFlight, acted, err
			}
			acted = true
			continue
		}
		if inFlight && len(candidate.Pods) > 0 {
			// One replacement at a time, as drift: the next is simulated on the cluster this one leaves.
			continue
		}
		why := cause{reason: in.Reason, why: fmt.Sprintf("its instance is interrupted at %s (%s)", starts, in.Reason), decision: "interruption"}
		launched, err := c.replace(ctx, snapshot, candidate, why, loadPools)
		if err != nil {
			return inFlight, acted, err
		}
		inFlight = inFlight || launched
		acted = acted || nodes.IsDisrupted(candidate.Node)
	}
	return inFlight, acted, nil
}
