package provisioning

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
)

// ReplacementOptions are what a replacement's launch carries beyond the planned node.
type ReplacementOptions struct {
	// Ledger reserves the launch under the pool's limits, beside Counted: the capacity of its
	// nodes by name (Counted). Without a ledger nothing is reserved.
	Ledger  *Ledger
	Counted map[string]corev1.ResourceList
	// Decision names what the launch is for, so that the same decision made again after a crash
	// gets the node the first launched (launcher.LaunchNode); empty launches anew.
	Decision string
	// Annotations are written on the NodeClaim and its Node.
	Annotations map[string]string
	// Reason is the disruption reason of the nodes the launch replaces (metrics.Reason*).
	Reason string
}

// LaunchReplacement makes a planned node that replaces others real through the one launcher: a
// NodeClaim of the pool and the cheapest candidate the cloud has capacity for, whose kubelet then
// registers its Node. Consolidation, expiry and drift launch so; the caller acts on the nodes it
// replaces only once a later snapshot shows the replacement registered and Ready.
func LaunchReplacement(ctx context.Context, l *launcher.Launcher, n *scheduling.NewNode, pool launcher.Pool, options ReplacementOptions) (*launcher.Launched, error) {
	// The decision made again finds its launch before reserving: the launch holds its room.
	if launched, err := l.LaunchedFor(ctx, options.Decision, options.Counted); launched != nil || err != nil {
		if err != nil {
			return nil, fmt.Errorf("launching a node for %s, %w", pool.Key(), err)
		}
		return launched, nil
	}
	candidates := n.Offerings()
	reservation := 0
	if options.Ledger != nil {
		kept, id, err := options.Ledger.Reserve(pool.Key(), pool.Limits(), options.Counted, candidates, pool.MinValues())
		if err != nil {
			return nil, fmt.Errorf("launching a node for %s, %w", pool.Key(), err)
		}
		candidates, reservation = kept, id
	}
	launched, err := l.LaunchNode(ctx, launcher.Request{Pool: pool, Candidates: candidates, Labels: n.Labels, Nodes: []*scheduling.NewNode{n}, Annotations: options.Annotations, Reason: options.Reason},
		options.Decision)
	if err != nil {
		if inProgress := (*launcher.LaunchInProgressError)(nil); options.Ledger != nil && errors.As(err, &inProgress) {
			options.Ledger.HandOver(reservation, inProgress.NodeClaim)
		} else if options.Ledger != nil {
			options.Ledger.Release(reservation)
		}
		return nil, fmt.Errorf("launching a node for %s, %w", pool.Key(), err)
	}
	if options.Ledger != nil {
		it := launcher.InstanceTypeNamed(candidates, launched.NodeClaim.Labels[corev1.LabelInstanceTypeStable])
		options.Ledger.Launched(reservation, launched.NodeClaim.Name, launched.NodeName, capacityOf(it))
	}
	return launched, nil
}

// Consolidation is what a consolidation's launch of its replacements carries beyond the planned
// nodes.
type Consolidation struct {
	// Replaced are the names of the nodes the replacements replace; ReplacedUIDs the UIDs of
	// those nodes (of their NodeClaims for a NodePool's), sorted, which name the decision.
	Replaced, ReplacedUIDs []string
	// Annotations are written on each replacement beside the nodes it replaces.
	Annotations map[string]string
	Ledger      *Ledger
	Reason      string
}

// LaunchReplacements launches a consolidation's replacements, each through LaunchReplacement in
// its pool (with the capacity its limits count), annotated with the nodes they replace and, when
// there are several, how many (v1alpha5.ReplacementsAnnotationKey). All or none: when one fails,
// those launched before it are withdrawn (WithdrawReplacements) and the error is the launch's,
// joined with any of the withdrawal; when one is still in progress (launcher.LaunchInProgressError)
// they are kept, for the decision made again to find.
func LaunchReplacements(ctx context.Context, l *launcher.Launcher, c client.Writer, replacements []*scheduling.NewNode,
	poolOf func(*scheduling.NewNode) (launcher.Pool, map[string]corev1.ResourceList), o Consolidation) ([]*launcher.Launched, error) {
	annotations := map[string]string{v1alpha5.ReplacesAnnotationKey: strings.Join(o.Replaced, ",")}
	if len(replacements) > 1 {
		annotations[v1alpha5.ReplacementsAnnotationKey] = strconv.Itoa(len(replacements))
	}
	maps.Copy(annotations, o.Annotations)
	launched := make([]*launcher.Launched, 0, len(replacements))
	for _, replacement := range replacements {
		pool, counted := poolOf(replacement)
		node, err := LaunchReplacement(ctx, l, replacement, pool, ReplacementOptions{
			Ledger:  o.Ledger,
			Counted: counted,
			// The same decision made again after a crash finds the NodeClaim launched for it.
			Decision:    consolidationDecision(o.ReplacedUIDs, replacement, len(replacements)),
			Annotations: annotations,
			Reason:      o.Reason,
		})
		if inProgress := (*launcher.LaunchInProgressError)(nil); errors.As(err, &inProgress) {
			// The decision made again finds each launch so far by its decision, this one too.
			return nil, err
		}
		if err != nil {
			nodeClaims := make([]*v1.NodeClaim, 0, len(launched))
			for _, done := range launched {
				nodeClaims = append(nodeClaims, done.NodeClaim)
			}
			return nil, errors.Join(err, WithdrawReplacements(ctx, c, nodeClaims))
		}
		launched = append(launched, node)
	}
	return launched, nil
}

// consolidationDecision names the launch of one of a consolidation's replacements
// (ReplacementOptions.Decision) of the nodes whose UIDs, sorted, are given: the same decision
// made again after a crash finds it. A lone replacement's name is the one it always had; one of
// several also names the pods planned onto it, so that a plan made again in another order does
// not take another's launch for its own.
func consolidationDecision(uids []string, replacement *scheduling.NewNode, of int) string {
	decision := "consolidation\n" + strings.Join(uids, "\n")
	if of > 1 {
		pods := make([]string, 0, len(replacement.Pods))
		for _, pod := range replacement.Pods {
			pods = append(pods, string(pod.UID))
		}
		slices.Sort(pods)
		decision += "\nreplacement of\n" + strings.Join(pods, "\n")
	}
	return decision
}

// WithdrawReplacements deletes the NodeClaims of a consolidation's replacements that cannot all
// be launched (one failed, or a crash came between their launches): the nodes they were for need
// them all, and stay.
func WithdrawReplacements(ctx context.Context, c client.Writer, nodeClaims []*v1.NodeClaim) error {
	var errs []error
	for _, nc := range nodeClaims {
		if err := c.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s, a replacement withdrawn, %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}
