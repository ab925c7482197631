package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

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
	"karpenter.sh/karpenter/pkg/overlay"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// replacementPools are the NodePools a replacement may be launched for, as the scheduler plans
// with them (their instance types, NodeOverlays applied, and what counts against their limits)
// and as the launcher launches for them. A pass reads them once, and only when it needs them.
type replacementPools struct {
	planned   []scheduling.Pool
	launchers map[pools.Key]launcher.Pool
	counted   map[pools.Key]map[string]corev1.ResourceList
}

// readPools reads the NodePools that may launch now (provisioning.NodePoolInstanceTypes), as the
// provisioning pass reads them.
func (c *Controller) readPools(ctx context.Context, snapshot *state.Snapshot, nodePools []v1.NodePool) (*replacementPools, error) {
	out := &replacementPools{launchers: map[pools.Key]launcher.Pool{}, counted: map[pools.Key]map[string]corev1.ResourceList{}}
	byKey := map[pools.Key]*v1.NodePool{}
	var inputs []overlay.Pool
	for i := range nodePools {
		np := &nodePools[i]
		class, types, why, err := provisioning.NodePoolInstanceTypes(ctx, c.Client, c.Instances, np)
		if err != nil {
			return nil, fmt.Errorf("reading nodepool %s, %w", np.Name, err)
		}
		if why != "" {
			continue
		}
		key := pools.NodePool(np.Name)
		byKey[key] = np
		out.launchers[key] = launcher.Pool{NodePool: np, NodeClass: class}
		inputs = append(inputs, provisioning.OverlayNodePool(np, types))
	}
	overlaid, _ := snapshot.AddInstanceTypes(inputs)
	all := snapshot.AllNodes()
	for _, input := range inputs {
		key := input.Key
		out.counted[key] = provisioning.Counted(all, key, snapshot.InstanceTypes)
		out.planned = append(out.planned, provisioning.LimitedNodePool(byKey[key], overlaid[key], c.Ledger.Used(key, out.counted[key]), c.MinValuesPolicy))
	}
	return out, nil
}

// finish carries on the replacements earlier passes started, on nodes tainted disrupted and not
// deleted yet: once all of a node's replacements are initialized the node goes (terminated is
// true), counted under the reason they were launched for; while one is not, it waits (inFlight
// is true). A node tainted without replacements (a crash between the
// taint and the launch, or replacements that failed) is replaced again while it is still drifted
// and free to go, and untainted otherwise: the disruption is rolled back.
func (c *Controller) finish(ctx context.Context, snapshot *state.Snapshot, candidates []*disruption.Candidate, block func(*disruption.Candidate) *disruption.Blocked, loadPools func() (*replacementPools, error)) (inFlight, terminated bool, err error) {
	for _, candidate := range candidates {
		if candidate.Node == nil || candidate.NodeClaim.DeletionTimestamp != nil || candidate.Node.DeletionTimestamp != nil || !nodes.IsDisrupted(candidate.Node) {
			continue
		}
		replacements := replacementsOf(snapshot, candidate.Node.Name)
		if len(replacements) > 0 {
			if slices.ContainsFunc(replacements, func(nc *v1.NodeClaim) bool { return !nc.IsTrue(v1.ConditionTypeInitialized) }) {
				inFlight = true
				continue
			}
			if launched, want := len(replacements), replacementsWanted(replacements); launched < want {
				// A crash between the launches of one decision's replacements: the node's pods
				// need them all, so the disruption is rolled back and those launched go.
				if err := provisioning.WithdrawReplacements(ctx, c.Client, replacements); err != nil {
					return inFlight, terminated, err
				}
				if err := c.rollBack(ctx, candidate, fmt.Sprintf("only %d of its %d replacements were launched", launched, want)); err != nil {
					return inFlight, terminated, err
				}
				continue
			}
			reason := replacements[0].Annotations[v1.DisruptionReasonAnnotationKey]
			if reason == "" {
				// Launched before replacements said why: the node's drift tells.
				reason = metrics.ReasonUnderutilized
				if candidate.NodeClaim.IsTrue(v1.ConditionTypeDrifted) {
					reason = metrics.ReasonDrifted
				}
			}
			if err := c.terminate(ctx, candidate, reason, fmt.Sprintf("its replacements %s are initialized", names(replacements)), ""); err != nil {
				return inFlight, terminated, err
			}
			terminated = true
			continue
		}
		if why := block(candidate); candidate.NodeClaim.IsTrue(v1.ConditionTypeDrifted) && (why == nil || disruption.DriftsPast(candidate, why)) {
			launched, err := c.replace(ctx, snapshot, candidate, driftCause(candidate), loadPools)
			if err != nil {
				return inFlight, terminated, err
			}
			inFlight = inFlight || launched
			continue
		}
		if err := c.rollBack(ctx, candidate, "its replacement was not launched, and it is no longer drifted or something now holds it"); err != nil {
			return inFlight, terminated, err
		}
	}
	return inFlight, terminated, nil
}

// replacementsWanted is how many replacements the decision that launched these launched
// together (v1alpha5.ReplacementsAnnotationKey), one when none says.
func replacementsWanted(replacements []*v1.NodeClaim) int {
	want := 1
	for _, nc := range replacements {
		if n, err := strconv.Atoi(nc.Annotations[v1alpha5.ReplacementsAnnotationKey]); err == nil {
			want = max(want, n)
		}
	}
	return want
}

// cause is why a node is replaced.
type cause struct {
	// reason is the karpenter_nodeclaims_disrupted_total reason it is removed for.
	reason string
	// why says it in an Event.
	why string
	// decision names the decision in the digest of the replacements' NodeClaims.
	decision string
	// voluntary is true for Karpenter's own choice (drift): it is counted among the voluntary
	// decisions and rolled back when its pods would fit nowhere or its replacement would exceed
	// its NodePool's limits. An interruption is not: the instance goes anyway, so its node stays
	// tainted and goes by its deadline.
	voluntary bool
}

// driftCause is why a drifted node is replaced.
func driftCause(candidate *disruption.Candidate) cause {
	why := "it drifted"
	if drifted := candidate.NodeClaim.Condition(v1.ConditionTypeDrifted); drifted != nil {
		why = fmt.Sprintf("it drifted (%s: %s)", drifted.Reason, drifted.Message)
	}
	return cause{reason: metrics.ReasonDrifted, why: why, decision: "drift", voluntary: true}
}

// replace disrupts a node for the cause: deleted at once when its pods fit on the other nodes
// (or it has none), otherwise tainted and the new nodes its pods need launched, each annotated
// with the node it replaces; it goes once they are initialized (finish, replaceInterrupted). It
// reports whether it launched. When its pods would fit nowhere, or the launch fails, the node
// stays, told why.
func (c *Controller) replace(ctx context.Context, snapshot *state.Snapshot, candidate *disruption.Candidate, why cause, loadPools func() (*replacementPools, error)) (bool, error) {
	// counted is the decision as the voluntary decisions count it: an interruption's is not.
	counted := func(decision string) string {
		if why.voluntary {
			return decision
		}
		return ""
	}
	decided := func(decision string) {
		if d := counted(decision); d != "" {
			countDecision(d, why.reason, 1)
		}
	}
	if len(candidate.Pods) == 0 {
		return false, c.terminate(ctx, candidate, why.reason, why.why, counted(decisionDelete))
	}
	loaded, err := loadPools()
	if err != nil {
		return false, err
	}
	room := slices.DeleteFunc(disruption.Room(snapshot), func(n scheduling.Node) bool { return n.Node.Name == candidate.Node.Name })
	results := scheduling.Schedule(snapshot.Question().Input(pods.Unbound(candidate.Pods), loaded.planned, room))
	if len(results.Unschedulable) > 0 {
		u := results.Unschedulable[0]
		c.tell(candidate, ReasonPodsFitNowhere, fmt.Sprintf("Not replaced: pod %s/%s would fit neither on the other nodes nor on a new one: %s", u.Pod.Namespace, u.Pod.Name, u.Reason))
		if why.voluntary && nodes.IsDisrupted(candidate.Node) {
			return false, c.rollBack(ctx, candidate, "its pods would fit nowhere")
		}
		return false, nil
	}
	if len(results.NewNodes) == 0 {
		return false, c.terminate(ctx, candidate, why.reason, why.why+"; its pods fit on the other nodes", counted(decisionDelete))
	}
	if err := nodes.TaintDisrupted(ctx, c.Client, candidate.Node); err != nil {
		return false, err
	}
	var launched []string
	for i, n := range results.NewNodes {
		pool, ok := loaded.launchers[n.Pool]
		if !ok {
			return false, fmt.Errorf("the replacement's %s is gone", n.Pool)
		}
		replacement, err := provisioning.LaunchReplacement(ctx, c.Launcher, n, pool, provisioning.ReplacementOptions{
			Ledger:  c.Ledger,
			Counted: loaded.counted[n.Pool],
			// The same decision made again after a crash finds the NodeClaim launched for it.
			Decision:    why.decision + "\n" + string(candidate.NodeClaim.UID) + "\n" + strconv.Itoa(i),
			Annotations: map[string]string{v1alpha5.ReplacesAnnotationKey: candidate.Node.Name, v1.DisruptionReasonAnnotationKey: why.reason},
			Reason:      why.reason,
		})
		if err != nil {
			c.tell(candidate, ReasonRolledBack, fmt.Sprintf("Not replaced: launching its replacement failed, %v", err))
			if limited := (*provisioning.LimitExceededError)(nil); why.voluntary && errors.As(err, &limited) && len(launched) == 0 {
				return false, c.rollBack(ctx, candidate, "its replacement would exceed its NodePool's limits")
			}
			if len(launched) > 0 {
				// The node goes once those launched are initialized: the decision was taken.
				decided(decisionReplace)
			}
			return len(launched) > 0, err
		}
		launched = append(launched, replacement.NodeClaim.Name)
	}
	c.acted(candidate)
	decided(decisionReplace)
	message := fmt.Sprintf("Disrupting: %s; launched %v for its pods, the node is deleted once they are initialized", why.why, launched)
	c.Recorder.Event(candidate.NodeClaim, corev1.EventTypeNormal, ReasonReplacing, message)
	c.Recorder.Event(candidate.Node, corev1.EventTypeNormal, ReasonReplacing, message)
	log.FromContext(ctx).Info("launched replacements for a nodeclaim", "nodeclaim", candidate.Name(), "reason", why.reason, "replacements", launched)
	return true, nil
}

// rollBack lifts the disrupted taint of a node Karpenter no longer removes, with an Event.
func (c *Controller) rollBack(ctx context.Context, candidate *disruption.Candidate, why string) error {
	if err := nodes.UntaintDisrupted(ctx, c.Client, candidate.Node); err != nil {
		return err
	}
	c.Recorder.Event(candidate.NodeClaim, corev1.EventTypeNormal, ReasonRolledBack, "Disruption rolled back: "+why)
	return nil
}

// tell records an Event on the NodeClaim and its node saying why an action on it did not go
// through, once per reason until an action does.
func (c *Controller) tell(candidate *disruption.Candidate, reason, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.toldActing[candidate.NodeClaim.UID] == reason {
		return
	}
	c.toldActing[candidate.NodeClaim.UID] = reason
	c.Recorder.Event(candidate.NodeClaim, corev1.EventTypeNormal, reason, message)
	if candidate.Node != nil {
		c.Recorder.Event(candidate.Node, corev1.EventTypeNormal, reason, message)
	}
}

// acted forgets why earlier actions on the candidate did not go through: one went.
func (c *Controller) acted(candidate *disruption.Candidate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.toldActing, candidate.NodeClaim.UID)
}

func names(ncs []*v1.NodeClaim) []string {
	out := make([]string, len(ncs))
	for i, nc := range ncs {
		out[i] = nc.Name
	}
	return out
}
