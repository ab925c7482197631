package provisioning

import (
	"context"
	"errors"
	"fmt"
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

// ConsolidationDecision names the launch of the i-th of a consolidation's replacements
// (ReplacementOptions.Decision) of the nodes (NodeClaims for a NodePool's) whose UIDs, sorted, are
// given: the same decision made again after a crash finds it. A lone replacement's name is the
// one it always had; one of several also names the pods planned onto it, so that a plan made
// again in another order does not take another's launch for its own.
func ConsolidationDecision(uids []string, replacement *scheduling.NewNode, of int) string {
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

// ConsolidationAnnotations are written on each of a consolidation's replacements: the nodes they
// replace (v1alpha5.ReplacesAnnotationKey) and, when there are several, how many
// (v1alpha5.ReplacementsAnnotationKey).
func ConsolidationAnnotations(replaced []string, replacements int) map[string]string {
	annotations := map[string]string{v1alpha5.ReplacesAnnotationKey: strings.Join(replaced, ",")}
	if replacements > 1 {
		annotations[v1alpha5.ReplacementsAnnotationKey] = strconv.Itoa(replacements)
	}
	return annotations
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
