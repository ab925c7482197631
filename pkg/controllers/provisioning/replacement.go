package provisioning

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
		options.Decision, options.Counted)
	if err != nil {
		if options.Ledger != nil {
			options.Ledger.Release(reservation)
		}
		return nil, fmt.Errorf("launching a node for %s, %w", pool.Key(), err)
	}
	if options.Ledger != nil {
		var capacity corev1.ResourceList
		if it := launcher.InstanceTypeNamed(candidates, launched.NodeClaim.Labels[corev1.LabelInstanceTypeStable]); it != nil {
			capacity = it.Capacity
		}
		options.Ledger.Launched(reservation, launched.NodeName, capacity)
	}
	return launched, nil
}

// ConsolidationDecision names the launch of the i-th replacement of the nodes (NodeClaims for a
// NodePool's) whose UIDs, sorted, are given (ReplacementOptions.Decision): the same decision made
// again after a crash finds it. The first's name is the one a lone replacement always had.
func ConsolidationDecision(uids []string, i int) string {
	decision := "consolidation\n" + strings.Join(uids, "\n")
	if i > 0 {
		decision += fmt.Sprintf("\nreplacement %d", i)
	}
	return decision
}
