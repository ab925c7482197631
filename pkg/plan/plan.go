// Package plan is `kubectl karpenter plan`: it runs the provisioning controller's own pass
// (provisioning.PlanPending) and consolidation's decisions (consolidation.Decide for
// Provisioners, disruption.ConsolidateUnderutilized for NodePools) on the cluster as it is, or
// on manifests not applied yet, and reports what Karpenter would launch, delete or replace, at
// what price, without doing any of it.
package plan

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/overlay"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// Report is what one provisioning pass would do now, and what consolidation would.
type Report struct {
	// NewNodes would be launched, in the order the pass opened them.
	NewNodes []NewNode `json:"newNodes"`
	// ExistingNodes are the nodes, Ready or still launching, pending pods would go to.
	ExistingNodes []ExistingNode `json:"existingNodes"`
	// Unschedulable are the pods no pool can take, with the scheduler's reason.
	Unschedulable []UnschedulablePod `json:"unschedulable"`
	// SkippedPools cannot launch now: a Provisioner whose instance types could not be
	// resolved; a NodePool being deleted, static, whose node class is not Ready, or whose
	// instance types could not be listed.
	SkippedPools []SkippedPool `json:"skippedPools,omitempty"`
	// NodeOverlays given that apply nowhere, as the nodeoverlay controller's conditions say.
	SkippedNodeOverlays []SkippedNodeOverlay `json:"skippedNodeOverlays,omitempty"`
	// PricePerHour is what the new nodes add, each at its cheapest offering, in US dollars.
	PricePerHour float64 `json:"pricePerHour"`
	// Planner made the new nodes: "packer" (the batch packer weighed them all), "packer-stopped"
	// (its budget ran out first; some are the one-pod-at-a-time scheduler's) or "greedy" (it
	// was not asked: --batch-packer-budget=0).
	// Empty when no pod is pending.
	Planner string `json:"planner,omitempty"`
	// Consolidation is set by --consolidation: what Provisioners' consolidation would do.
	Consolidation *Consolidation `json:"consolidation,omitempty"`
	// NodePoolConsolidation is set by --consolidation when the cluster has NodePools: what the
	// disruption controller's consolidation of underutilized nodes would do.
	NodePoolConsolidation *Consolidation `json:"nodePoolConsolidation,omitempty"`
}

// NewNode is a node the pass would launch. InstanceType, Zone and CapacityType are the
// cheapest offering, the one the cloud is asked for first; InstanceTypes are every candidate,
// cheapest first, that a capacity error falls through to. The controller asks EC2 for the
// candidates in this order: on-demand launches the first that has capacity; spot weighs each
// pool's spare capacity before its price, so it launches the first while its capacity is
// ample.
type NewNode struct {
	// Pool launches the node, named by kind, as kubectl names objects: provisioner/default,
	// nodepool/default (both kinds may share a name).
	Pool          string   `json:"pool"`
	InstanceType  string   `json:"instanceType"`
	Zone          string   `json:"zone"`
	CapacityType  string   `json:"capacityType"`
	PricePerHour  float64  `json:"pricePerHour"`
	InstanceTypes []string `json:"instanceTypes"`
	Pods          []string `json:"pods"`
}

// ExistingNode is room on a node that exists, or is launching, that the pass uses.
type ExistingNode struct {
	Name      string   `json:"name"`
	Launching bool     `json:"launching,omitempty"`
	Pods      []string `json:"pods"`
}

// UnschedulablePod is a pod no pool can take.
type UnschedulablePod struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// SkippedNodeOverlay is a NodeOverlay that changes no instance type, and why.
type SkippedNodeOverlay struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// skippedOverlays are the overlays, by name, that apply nowhere.
func skippedOverlays(overlays []v1alpha1.NodeOverlay, outcomes map[string]overlay.Outcome) []SkippedNodeOverlay {
	var out []SkippedNodeOverlay
	for i := range overlays {
		name := overlays[i].Name
		switch o := outcomes[name]; {
		case o.Invalid != nil:
			out = append(out, SkippedNodeOverlay{name, o.Invalid.Error()})
		case o.ConflictsWith != "":
			out = append(out, SkippedNodeOverlay{name, fmt.Sprintf("conflicts with NodeOverlay %s of the same weight, which applies", o.ConflictsWith)})
		case !o.Matched:
			out = append(out, SkippedNodeOverlay{name, "its requirements match no offering of any Provisioner's or NodePool's instance types"})
		}
	}
	slices.SortFunc(out, func(a, b SkippedNodeOverlay) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// SkippedPool is a Provisioner or a NodePool the pass plans no node for, and why.
type SkippedPool struct {
	// Kind is Provisioner or NodePool.
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Pools are what the pass launches for: Provisioners and NodePools, whose EC2NodeClasses
// NodeClasses reads (it may be nil when there are no NodePools).
type Pools struct {
	Provisioners []v1alpha5.Provisioner
	NodePools    []v1.NodePool
	NodeClasses  client.Reader
	// MinValuesPolicy is the controller's --min-values-policy; empty is Strict.
	MinValuesPolicy scheduling.MinValuesPolicy
	// PackBudget is the controller's --batch-packer-budget; zero plans without the batch
	// packer.
	PackBudget time.Duration
}

// Provisioning plans the snapshot's pending pods as the provisioning controller does: each
// Provisioner, and each NodePool whose node class is Ready, with the instance types the lister
// gives for it (added to the snapshot, as the controller does, the snapshot's NodeOverlays
// applied) and what its nodes hold against its limits.
func Provisioning(ctx context.Context, snapshot *state.Snapshot, in Pools, lister cloudprovider.InstanceTypeLister) *Report {
	report := &Report{NewNodes: []NewNode{}, ExistingNodes: []ExistingNode{}, Unschedulable: []UnschedulablePod{}}
	planned := plannedPools(ctx, snapshot, in, lister, report)
	plan := provisioning.PlanPending(snapshot, planned, provisioning.Packer(in.PackBudget, clock.RealClock{}))
	if plan.Results == nil {
		// Nothing pending: pods may still wait for the nodes they are nominated to.
		plan.Results = &scheduling.Results{}
	}
	for _, n := range plan.Results.NewNodes {
		report.NewNodes = append(report.NewNodes, newNode(n))
	}
	if len(plan.Pending) > 0 {
		report.Planner = plan.Results.Packed.Planner()
	}
	report.PricePerHour = plan.Results.Price()
	report.ExistingNodes = existingNodes(snapshot, plan.Results)
	for _, u := range plan.Results.Unschedulable {
		report.Unschedulable = append(report.Unschedulable, UnschedulablePod{Pod: podName(u.Pod), Reason: u.Reason})
	}
	slices.SortFunc(report.Unschedulable, func(a, b UnschedulablePod) int { return cmp.Compare(a.Pod, b.Pod) })
	return report
}

// plannedPools are the pools as the controller's pass plans with them: each Provisioner, and
// each NodePool whose node class is Ready, with the instance types the lister gives for it
// (added to the snapshot, its NodeOverlays applied) and what its nodes hold against its limits.
// The pools that cannot launch and the NodeOverlays that apply nowhere go into the report.
func plannedPools(ctx context.Context, snapshot *state.Snapshot, in Pools, lister cloudprovider.InstanceTypeLister, report *Report) []scheduling.Pool {
	provisioners := slices.SortedFunc(slices.Values(in.Provisioners), func(a, b v1alpha5.Provisioner) int { return cmp.Compare(a.Name, b.Name) })
	var overlayInputs []overlay.Pool
	for i := range provisioners {
		p := &provisioners[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		types, _, err := provisioning.ResolveInstanceTypes(ctx, lister, p)
		if err != nil {
			report.SkippedPools = append(report.SkippedPools, SkippedPool{"Provisioner", p.Name, err.Error()})
			continue
		}
		overlayInputs = append(overlayInputs, provisioning.OverlayPool(p, types))
	}
	nodePools := slices.SortedFunc(slices.Values(in.NodePools), func(a, b v1.NodePool) int { return cmp.Compare(a.Name, b.Name) })
	for i := range nodePools {
		np := &nodePools[i]
		_, types, why, err := provisioning.NodePoolInstanceTypes(ctx, in.NodeClasses, lister, np)
		if err != nil {
			why = err.Error()
		}
		if why != "" {
			report.SkippedPools = append(report.SkippedPools, SkippedPool{"NodePool", np.Name, why})
			continue
		}
		overlayInputs = append(overlayInputs, provisioning.OverlayNodePool(np, types))
	}
	resolved, outcomes := snapshot.AddInstanceTypes(overlayInputs)
	report.SkippedNodeOverlays = skippedOverlays(snapshot.Overlays, outcomes)
	var planned []scheduling.Pool
	for i := range provisioners {
		key := pools.Provisioner(provisioners[i].Name)
		if types, ok := resolved[key]; ok {
			planned = append(planned, provisioning.Limited(&provisioners[i], types, provisioning.Used(snapshot, key)))
		}
	}
	for i := range nodePools {
		key := pools.NodePool(nodePools[i].Name)
		if types, ok := resolved[key]; ok {
			planned = append(planned, provisioning.LimitedNodePool(&nodePools[i], types, provisioning.Used(snapshot, key), in.MinValuesPolicy))
		}
	}
	return planned
}

// existingNodes are the nodes, existing or launching, the plan puts pending pods on, and those
// pods nominated to a standing node wait for.
func existingNodes(snapshot *state.Snapshot, results *scheduling.Results) []ExistingNode {
	out := []ExistingNode{}
	// Launching are the Nodes still launching and the NodeClaims launched whose kubelet has not
	// registered a Node yet.
	launching := sets.New[string]()
	for _, node := range snapshot.AllNodes() {
		if nodes.IsLaunching(&node) {
			launching.Insert(node.Name)
		}
	}
	byNode := map[string]int{}
	onNode := func(name string, pod *corev1.Pod) {
		i, ok := byNode[name]
		if !ok {
			i = len(out)
			byNode[name] = i
			out = append(out, ExistingNode{Name: name, Launching: launching.Has(name)})
		}
		out[i].Pods = append(out[i].Pods, podName(pod))
	}
	placedByPlan := map[types.UID]bool{}
	for _, b := range results.Bindings {
		placedByPlan[b.Pod.UID] = true
		if !slices.ContainsFunc(results.NewNodes, func(n *scheduling.NewNode) bool { return n.Hostname == b.NodeName }) {
			onNode(b.NodeName, b.Pod)
		}
	}
	// A pod nominated to a node that stands waits for it (the controller nominated it there):
	// the plan counts it on that node's room, not among the pending, and reports it there.
	standing := snapshot.StandingNodes()
	for i := range snapshot.Pods {
		pod := &snapshot.Pods[i]
		if node := pods.NominatedNode(pod); node != "" && standing.Has(node) && !placedByPlan[pod.UID] {
			onNode(node, pod)
		}
	}
	for i := range out {
		slices.Sort(out[i].Pods)
	}
	slices.SortFunc(out, func(a, b ExistingNode) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// newNode reports a planned node as the controller would launch it: its candidates, cheapest
// first, are those NewNode.Offerings gives the cloud.
func newNode(n *scheduling.NewNode) NewNode {
	out := NewNode{Pool: PoolName(n.Pool), PricePerHour: n.Price}
	for _, it := range n.InstanceTypes {
		out.InstanceTypes = append(out.InstanceTypes, it.Name)
	}
	if candidates := n.Offerings(); len(candidates) > 0 {
		first := candidates[0]
		out.InstanceType, out.Zone, out.CapacityType, out.PricePerHour = first.InstanceType.Name, first.Offering.Zone, first.Offering.CapacityType, first.Offering.Price
	}
	for _, pod := range n.Pods {
		out.Pods = append(out.Pods, podName(pod))
	}
	slices.Sort(out.Pods)
	return out
}

// PoolName names a pool by kind and name, as kubectl names objects: nodepool/default.
func PoolName(key pools.Key) string { return strings.ToLower(key.Kind()) + "/" + key.Name }

func podName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
