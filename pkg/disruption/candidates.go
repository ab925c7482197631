package disruption

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// Candidates are the NodePools' NodeClaims with their nodes, the movable pods bound or
// nominated there and the DaemonSets' and mirror pods running there, oldest first. NodeClaims
// of a NodePool not listed, static or being deleted are left out: its own controller or the
// deletion takes care of them.
func Candidates(snapshot *state.Snapshot, nodePools []v1.NodePool) []*Candidate {
	byName := map[string]*v1.NodePool{}
	for i := range nodePools {
		if np := &nodePools[i]; np.DeletionTimestamp == nil && np.Spec.Replicas == nil {
			byName[np.Name] = np
		}
	}
	byNode := map[string]*corev1.Node{}
	for i := range snapshot.Nodes {
		byNode[snapshot.Nodes[i].Name] = &snapshot.Nodes[i]
	}
	onNode, resident := map[string][]*corev1.Pod{}, map[string][]*corev1.Pod{}
	for i := range snapshot.Pods {
		pod := &snapshot.Pods[i]
		name := pod.Spec.NodeName
		if name == "" {
			name = pods.NominatedNode(pod)
		}
		if name == "" {
			continue
		}
		if pods.IsMovable(pod) {
			onNode[name] = append(onNode[name], pod)
		} else if pod.Spec.NodeName != "" && !pods.IsTerminal(pod) {
			resident[name] = append(resident[name], pod)
		}
	}
	var out []*Candidate
	for i := range snapshot.NodeClaims {
		nc := &snapshot.NodeClaims[i]
		np := byName[nc.Labels[v1.NodePoolLabelKey]]
		if np == nil {
			continue
		}
		candidate := &Candidate{NodeClaim: nc, NodePool: np, Disrupting: nc.DeletionTimestamp != nil}
		if node := byNode[nc.Status.NodeName]; node != nil && nc.Status.NodeName != "" {
			candidate.Node = node
			candidate.Pods, candidate.Resident = onNode[node.Name], resident[node.Name]
			candidate.Disrupting = candidate.Disrupting || node.DeletionTimestamp != nil || nodes.IsDisrupted(node)
		}
		out = append(out, candidate)
	}
	slices.SortFunc(out, func(a, b *Candidate) int {
		return cmp.Or(a.NodeClaim.CreationTimestamp.Compare(b.NodeClaim.CreationTimestamp.Time), cmp.Compare(a.Name(), b.Name()))
	})
	return out
}
