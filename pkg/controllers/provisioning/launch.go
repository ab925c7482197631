package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
)

// launchGroup is new nodes of one plan that one cloud call launches: the same pool (so the same
// taints), the same labels the plan chose, and the same candidates, in the same order.
type launchGroup struct {
	pool       pools.Key
	candidates []cloudprovider.Candidate
	nodes      []*scheduling.NewNode
}

// labels are those the plan chose for the group's nodes, the same for each (poolAndLabels).
func (g *launchGroup) labels() map[string]string { return g.nodes[0].Labels }

// pods are the pods of every node of the group.
func (g *launchGroup) pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range g.nodes {
		out = append(out, n.Pods...)
	}
	return out
}

// minLaunchGroup is how many identical nodes a launch group may always hold, however small the
// plan: a call for a few instances takes no longer than a call for one, and each call spends
// the account's EC2 API rate.
const minLaunchGroup = 10

// launchGroupSize is the most nodes a group of a plan of n new nodes holds: a share of the
// plan for each launch that may run at once, so that a large plan launches in parallel rather
// than one call describing and registering hundreds of instances alone, but at least
// minLaunchGroup, so that a small plan (an early pass's) does not make a call per node.
func launchGroupSize(n, concurrency int) int {
	concurrency = max(concurrency, 1)
	return max((n+concurrency-1)/concurrency, minLaunchGroup)
}

// groupLaunches groups the plan's identical new nodes, in plan order, into groups of at most
// maxSize nodes; one cloud call launches a group.
func groupLaunches(newNodes []*scheduling.NewNode, maxSize int) []*launchGroup {
	maxSize = max(maxSize, 1)
	var out []*launchGroup
	open := map[groupKey]*launchGroup{}
	var lists candidateLists
	for _, n := range newNodes {
		key := lists.groupKey(n)
		g, ok := open[key]
		if !ok || len(g.nodes) == maxSize {
			g = &launchGroup{pool: n.Pool, candidates: lists.lists[key.list]}
			open[key] = g
			out = append(out, g)
		}
		g.nodes = append(g.nodes, n)
	}
	return out
}

// candidateLists computes the candidates of a plan's new nodes (NewNode.Offerings) once for each
// distinct instance types and requirements, and gives equal lists one index. A large plan's
// nodes mostly share them, and a thousand candidates computed and keyed for each node was most
// of the time between a plan and its first launch (docs/benchmarks.md, "NodeClaims created
// before records").
type candidateLists struct {
	lists    [][]cloudprovider.Candidate
	byInputs map[candidateInputsKey][]candidateInputs
}

// groupKey is equal for new nodes of a plan one cloud call may launch together: the same pool,
// labels chosen and candidates (launchKey, within a plan).
type groupKey struct {
	poolAndLabels string
	list          int
}

// groupKey is the node's.
func (c *candidateLists) groupKey(n *scheduling.NewNode) groupKey {
	return groupKey{poolAndLabels: poolAndLabels(n), list: c.of(n)}
}

// candidateInputsKey narrows the inputs a node's candidates may have been computed from.
type candidateInputsKey struct {
	types       int
	first, last *cloudprovider.InstanceType
	// requirements are the node's, rendered.
	requirements string
}

// candidateInputs are the instance types a list was computed from.
type candidateInputs struct {
	types []*cloudprovider.InstanceType
	list  int
}

// of is the index of the node's candidates in lists.
func (c *candidateLists) of(n *scheduling.NewNode) int {
	key := candidateInputsKey{types: len(n.InstanceTypes), requirements: renderRequirements(n.Requirements)}
	if len(n.InstanceTypes) > 0 {
		key.first, key.last = n.InstanceTypes[0], n.InstanceTypes[len(n.InstanceTypes)-1]
	}
	for _, in := range c.byInputs[key] {
		if slices.Equal(in.types, n.InstanceTypes) {
			return in.list
		}
	}
	candidates := n.Offerings()
	list := slices.IndexFunc(c.lists, func(l []cloudprovider.Candidate) bool { return slices.Equal(l, candidates) })
	if list < 0 {
		list = len(c.lists)
		c.lists = append(c.lists, candidates)
	}
	if c.byInputs == nil {
		c.byInputs = map[candidateInputsKey][]candidateInputs{}
	}
	c.byInputs[key] = append(c.byInputs[key], candidateInputs{types: n.InstanceTypes, list: list})
	return list
}

// renderRequirements writes requirements as one string, equal only for equal requirements:
// each value quoted, as nothing validates the values of a pod's node affinity (["a b"] is not
// ["a", "b"]).
func renderRequirements(requirements []corev1.NodeSelectorRequirement) string {
	var b []byte
	for _, r := range requirements {
		b = strconv.AppendQuote(b, r.Key)
		b = append(b, ' ')
		b = append(b, r.Operator...)
		for _, v := range r.Values {
			b = append(b, ' ')
			b = strconv.AppendQuote(b, v)
		}
		b = append(b, '\n')
	}
	return string(b)
}

// poolAndLabels is equal for new nodes of the same pool with the same labels chosen.
func poolAndLabels(n *scheduling.NewNode) string {
	var b strings.Builder
	b.WriteString(n.Pool.LabelKey + "=" + n.Pool.Name)
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		fmt.Fprintf(&b, ",%s=%s", k, n.Labels[k])
	}
	return b.String()
}

// launchKey is equal for launches of new nodes the cloud cannot tell apart: of the same pool,
// with the same labels chosen, as the candidates.
func launchKey(n *scheduling.NewNode, candidates []cloudprovider.Candidate) string {
	var b strings.Builder
	b.WriteString(poolAndLabels(n))
	// Written piece by piece: a thousand candidates for each node of a batch through Fprintf
	// was a sixth of a large pass's time before its first launch.
	for _, c := range candidates {
		b.WriteByte('\n')
		b.WriteString(c.InstanceType.Name)
		b.WriteByte(' ')
		b.WriteString(c.Offering.Zone)
		b.WriteByte(' ')
		b.WriteString(c.Offering.CapacityType)
	}
	return b.String()
}

// capacityReasons lists the offerings a launch found no capacity in, with the cloud's reason
// where it gave one, for an Event: the first few, as an Event's message is short.
func capacityReasons(err *cloudprovider.InsufficientCapacityError) string {
	const shown = 8
	parts := make([]string, 0, min(len(err.Offerings), shown)+1)
	for i, o := range err.Offerings {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(err.Offerings)-shown))
			break
		}
		part := fmt.Sprintf("%s in %s (%s)", o.InstanceType, o.Zone, o.CapacityType)
		if reason := err.Reasons[o]; reason != "" {
			part += ": " + reason
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
