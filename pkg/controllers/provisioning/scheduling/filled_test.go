package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestFilled: a node is filled when none of the pods, placed or not, fits the room its cheapest
// instance type has left.
func TestFilled(t *testing.T) {
	pods := func(cpus ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for i, cpu := range cpus {
			out = append(out, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("pod-%d", i), Requests: builders.Resources("cpu", cpu, "memory", "64Mi")}))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		placed []*corev1.Pod
		others []*corev1.Pod
		filled int
	}{
		// The synthetic types have n cores less 100m of overhead: two 900m pods leave 100m.
		{name: "no pod fits the room left", placed: pods("900m", "900m"), filled: 1},
		{name: "a small pod still fits", placed: pods("900m", "900m", "50m"), filled: 0},
		{name: "a pod waiting elsewhere would fit", placed: pods("900m", "900m"), others: pods("50m"), filled: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{Pods: tc.placed, Pools: []scheduling.Pool{workloadProvisioner(workloadInstanceTypes())}}
			r := scheduling.Schedule(in)
			if len(r.NewNodes) != 1 || len(r.Unschedulable) > 0 {
				t.Fatalf("%d new nodes, %v unschedulable, want one node for every pod", len(r.NewNodes), r.Unschedulable)
			}
			if got := scheduling.Filled(r.NewNodes, append(tc.placed, tc.others...)); len(got) != tc.filled {
				t.Errorf("%d filled nodes, want %d (node of %s)", len(got), tc.filled, r.NewNodes[0].InstanceTypes[0].Name)
			}
		})
	}
	if got := scheduling.Filled([]*scheduling.NewNode{{Hostname: "not-planned"}}, pods("1")); len(got) != 0 {
		t.Errorf("a node not from Schedule is filled")
	}
}
