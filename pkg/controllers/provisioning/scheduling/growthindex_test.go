package scheduling_test

import (
	"fmt"
	"slices"
	"testing"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
)

// TestGrowthIndexPlansAsWeighingEveryNode: the growth index finds the same cheapest growth as
// walking every open node, so the plans are those of the walk, pod for pod and node for node:
// on the real catalogue, where a new node may be cheaper than most growths and the index is
// asked at most pods (with and without the batch packer), and on the mixed workloads of every
// constraint kind.
func TestGrowthIndexPlansAsWeighingEveryNode(t *testing.T) {
	types := emulatorInstanceTypes(t)
	inputs := map[string]scheduling.Input{
		"real catalogue, 1000 pods":             {Pods: workloadPods(1000), Pools: []scheduling.Pool{workloadProvisioner(types)}},
		"real catalogue, 1000 pods, the packer": {Pods: workloadPods(1000), Pools: []scheduling.Pool{workloadProvisioner(types)}, Pack: unboundedPacker()},
	}
	for seed := int64(1); seed <= 20; seed++ {
		inputs[fmt.Sprintf("mixed, seed %d", seed)] = workloads.Mixed(seed)
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			indexed := scheduling.Schedule(in)
			walked := scheduling.ScheduleWalkingEveryGrowth(in)
			if got, want := describePlan(indexed), describePlan(walked); !slices.Equal(got, want) {
				t.Errorf("the plans differ:\nwith the index %v\nwalking %v", got, want)
			}
		})
	}
}

// describePlan is each binding, then each new node's types and price, then each pod left
// pending, in the plan's order.
func describePlan(r *scheduling.Results) []string {
	var out []string
	for _, b := range r.Bindings {
		out = append(out, b.Pod.Name+" → "+b.NodeName)
	}
	for _, n := range r.NewNodes {
		var names []string
		for _, it := range n.InstanceTypes {
			names = append(names, it.Name)
		}
		out = append(out, fmt.Sprintf("%s: %v at %.5f", n.Hostname, names, n.Price))
	}
	for _, e := range r.Unschedulable {
		out = append(out, e.Pod.Name+" pending: "+e.Reason)
	}
	return out
}
