package provisioning

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	pkgscheduling "karpenter.sh/karpenter/pkg/scheduling"
)

// Candidates are every available offering of the new node's instance types that its
// requirements allow (zone, capacity type), cheapest first, so that a capacity error falls
// through to the next cheapest; equal prices keep the scheduler's order.
func Candidates(n *scheduling.NewNode) []cloudprovider.Candidate {
	requirements := pkgscheduling.Requirements{}
	for _, r := range n.Requirements {
		// The scheduler rendered these from requirements it parsed; a key it could not
		// parse again allows nothing.
		if err := requirements.Add(r.Key, r.Operator, r.Values...); err != nil {
			return nil
		}
	}
	allows := func(key, value string) bool {
		r, ok := requirements[key]
		return !ok || r.Has(value)
	}
	var out []cloudprovider.Candidate
	for _, it := range n.InstanceTypes {
		for _, o := range it.Offerings {
			if o.Available && allows(corev1.LabelTopologyZone, o.Zone) && allows(v1alpha5.CapacityTypeLabelKey, o.CapacityType) {
				out = append(out, cloudprovider.Candidate{InstanceType: it, Offering: o})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b cloudprovider.Candidate) int { return cmp.Compare(a.Offering.Price, b.Offering.Price) })
	return out
}

// launchGroup is new nodes of one plan that one cloud call launches: the same Provisioner
// (so the same labels and taints) and the same candidates, in the same order.
type launchGroup struct {
	provisioner string
	candidates  []cloudprovider.Candidate
	nodes       []*scheduling.NewNode
}

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
	open := map[string]*launchGroup{}
	for _, n := range newNodes {
		candidates := Candidates(n)
		key := launchKey(n.Provisioner, candidates)
		g, ok := open[key]
		if !ok || len(g.nodes) == maxSize {
			g = &launchGroup{provisioner: n.Provisioner, candidates: candidates}
			open[key] = g
			out = append(out, g)
		}
		g.nodes = append(g.nodes, n)
	}
	return out
}

// launchKey is equal for launches the cloud cannot tell apart.
func launchKey(provisioner string, candidates []cloudprovider.Candidate) string {
	var b strings.Builder
	b.WriteString(provisioner)
	for _, c := range candidates {
		fmt.Fprintf(&b, "\n%s %s %s", c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType)
	}
	return b.String()
}

// LaunchLabels are the labels Karpenter asks the cloud to register the node with: the
// Provisioner's own and its name.
func LaunchLabels(p *v1alpha5.Provisioner) map[string]string {
	labels := maps.Clone(p.Spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha5.ProvisionerNameLabelKey] = p.Name
	return labels
}

// NodeFor is the Node object of a launched instance, created at once so that the scheduler
// sees the room coming and the instance has an owner: named as the instance will register,
// labelled with everything pods may select (the Provisioner's labels, its name, the
// instance type's and the offering's), tainted with the Provisioner's taints and not-ready
// until the kubelet reports Ready, and finalized so that its instance is terminated with it.
// The same instance always gives the same Node, so creating it again is harmless.
func NodeFor(instance *cloudprovider.Instance, p *v1alpha5.Provisioner, it *cloudprovider.InstanceType) *corev1.Node {
	labels := map[string]string{}
	if it != nil {
		maps.Copy(labels, it.Labels)
	}
	maps.Copy(labels, instance.Labels)
	maps.Copy(labels, LaunchLabels(p))
	maps.Copy(labels, map[string]string{
		corev1.LabelHostname:           instance.NodeName,
		corev1.LabelInstanceTypeStable: instance.InstanceType,
		corev1.LabelTopologyZone:       instance.Zone,
		v1alpha5.CapacityTypeLabelKey:  instance.CapacityType,
	})
	taints := slices.Clone(p.Spec.Taints)
	taints = append(taints, corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule})
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:       instance.NodeName,
			Labels:     labels,
			Finalizers: []string{v1alpha5.TerminationFinalizer},
		},
		Spec: corev1.NodeSpec{ProviderID: instance.ProviderID, Taints: taints},
	}
}

// instanceTypeNamed finds the candidate's instance type the cloud launched.
func instanceTypeNamed(candidates []cloudprovider.Candidate, name string) *cloudprovider.InstanceType {
	for _, c := range candidates {
		if c.InstanceType.Name == name {
			return c.InstanceType
		}
	}
	return nil
}

// idempotencyKey names the launch of nodes for pods: a launch retried for the same pods
// (after a lost answer) gets the instances the first one launched rather than more.
func idempotencyKey(provisioner string, pods []*corev1.Pod) string {
	uids := make([]string, len(pods))
	for i, pod := range pods {
		uids[i] = string(pod.UID)
	}
	slices.Sort(uids)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s", provisioner, strings.Join(uids, "\n"))
	return hex.EncodeToString(h.Sum(nil))
}

// untakenKey is the key of a launch whose earlier answers under key were the taken nodes
// (see LaunchUntaken); key itself when none was.
func untakenKey(key string, taken []string) string {
	if len(taken) == 0 {
		return key
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\ntaken\n%s", key, strings.Join(slices.Sorted(slices.Values(taken)), "\n"))
	return hex.EncodeToString(h.Sum(nil))
}

// LaunchUntaken asks the cloud for the request's instances under its idempotency key, so that
// a launch retried (after a crash or a lost answer) gets the instances the first attempt
// launched. When one of those is a node the caller's plan already saw (existing, the
// Provisioner's nodes by name), the plan found no room there for what this launch is for:
// other pods took it (kube-scheduler binds any pending pod to any node that fits). Answering
// with it again would leave the pods pending for good, or a replacement never made, so the
// launch is asked again under a key that also names the taken nodes, which a retry derives
// the same way. Instances of such an answer that were not taken are left to garbage
// collection. An empty key launches anew, once.
func LaunchUntaken(ctx context.Context, instances cloudprovider.InstanceProvider, request cloudprovider.LaunchRequest, existing map[string]corev1.ResourceList) ([]*cloudprovider.Instance, error) {
	key := request.IdempotencyKey
	var taken []string
	for {
		request.IdempotencyKey = untakenKey(key, taken)
		launched, err := instances.Create(ctx, request)
		if err != nil || key == "" {
			return launched, err
		}
		var stale []string
		for _, instance := range launched {
			if _, ok := existing[instance.NodeName]; ok && !slices.Contains(taken, instance.NodeName) {
				stale = append(stale, instance.NodeName)
			}
		}
		// Each round names at least one more of the finitely many existing nodes.
		if len(stale) == 0 {
			return launched, nil
		}
		taken = append(taken, stale...)
	}
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
