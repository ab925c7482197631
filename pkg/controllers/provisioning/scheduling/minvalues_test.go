package scheduling_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// minValuesPool is a NodePool of the workload catalogue (small, arm-medium, medium, large,
// tiny-pods, cheapest first) whose requirement on key asks for min values, under policy.
func minValuesPool(key string, min int, policy scheduling.MinValuesPolicy) scheduling.Pool {
	pool := nodePool("flexible", 0, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: key, Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(min)},
		}
	})
	pool.MinValuesPolicy = policy
	return pool
}

func limited(pool scheduling.Pool, cpu string) scheduling.Pool {
	pool.Limits = builders.Resources("cpu", cpu)
	return pool
}

func TestFromNodePoolKeepsMinValues(t *testing.T) {
	pool := nodePool("flexible", 0, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(3)},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"large"}, MinValues: ptr.To(2)},
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpExists},
		}
	})
	if len(pool.MinValues) != 1 || pool.MinValues[corev1.LabelInstanceTypeStable] != 3 {
		t.Errorf("minValues %v, want the larger of the instance type's only", pool.MinValues)
	}
}

// TestMinValues: a node keeps minValues distinct values of the key among its instance types;
// where its pods leave fewer, Strict refuses the node (the pods go to other nodes or stay
// pending, saying why) and BestEffort launches it marked relaxed.
func TestMinValues(t *testing.T) {
	cpu := func(n int, cpu string, o builders.PodOptions) []*corev1.Pod {
		o.Requests = requests(cpu, "1Gi")
		return builders.Pods(n, o)
	}
	amd64 := builders.PodOptions{NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"}}
	zone1 := builders.PodOptions{NodeSelector: map[string]string{corev1.LabelTopologyZone: "zone-1"}}
	for _, tc := range []struct {
		name string
		pool scheduling.Pool
		pods []*corev1.Pod
		// nodes and unschedulable are the new nodes and pods left pending; relaxed is how many
		// of the nodes are marked relaxed.
		nodes, unschedulable, relaxed int
	}{
		{"a small pod keeps every type", minValuesPool(corev1.LabelInstanceTypeStable, 5, scheduling.MinValuesStrict), cpu(1, "1", builders.PodOptions{}), 1, 0, 0},
		{"Strict: a pod that fits two types only is refused", minValuesPool(corev1.LabelInstanceTypeStable, 3, scheduling.MinValuesStrict), cpu(1, "7", builders.PodOptions{}), 0, 1, 0},
		{"BestEffort: it launches relaxed", minValuesPool(corev1.LabelInstanceTypeStable, 3, scheduling.MinValuesBestEffort), cpu(1, "7", builders.PodOptions{}), 1, 0, 1},
		{"the empty policy is Strict", minValuesPool(corev1.LabelInstanceTypeStable, 3, ""), cpu(1, "7", builders.PodOptions{}), 0, 1, 0},
		{"Strict: a pod selecting one arch of two is refused", minValuesPool(corev1.LabelArchStable, 2, scheduling.MinValuesStrict), cpu(1, "1", amd64), 0, 1, 0},
		{"BestEffort: one arch, relaxed", minValuesPool(corev1.LabelArchStable, 2, scheduling.MinValuesBestEffort), cpu(1, "1", amd64), 1, 0, 1},
		{"Strict: a pod pinned to a zone of three is refused", minValuesPool(corev1.LabelTopologyZone, 3, scheduling.MinValuesStrict), cpu(1, "1", zone1), 0, 1, 0},
		{"zones: three kept", minValuesPool(corev1.LabelTopologyZone, 3, scheduling.MinValuesStrict), cpu(1, "1", builders.PodOptions{}), 1, 0, 0},
		{"Strict: capacity types of two", minValuesPool(v1.CapacityTypeLabelKey, 2, scheduling.MinValuesStrict), cpu(1, "1", builders.PodOptions{}), 1, 0, 0},
		// Two 3-cpu pods share a node only as large or tiny-pods, two types: Strict opens a
		// node each, of four types.
		{"Strict: pods that would grow a node below minValues open another", minValuesPool(corev1.LabelInstanceTypeStable, 3, scheduling.MinValuesStrict), cpu(2, "3", builders.PodOptions{}), 2, 0, 0},
		// Limits of 3 cpus leave small, 2 cpus, the only type a node may launch as.
		{"Strict: limits that leave too few types refuse", limited(minValuesPool(corev1.LabelInstanceTypeStable, 2, scheduling.MinValuesStrict), "3"), cpu(1, "1", builders.PodOptions{}), 0, 1, 0},
		{"a pool without minValues is never relaxed", nodePool("plain", 0, nil), cpu(1, "7", amd64), 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{Pods: tc.pods, Pools: []scheduling.Pool{tc.pool}}
			r := scheduling.Schedule(in)
			if !verified(t, in, r) {
				t.FailNow()
			}
			relaxed := 0
			for _, n := range r.NewNodes {
				if n.MinValuesRelaxed {
					relaxed++
				}
			}
			if len(r.NewNodes) != tc.nodes || len(r.Unschedulable) != tc.unschedulable || relaxed != tc.relaxed {
				t.Fatalf("%s: %d relaxed; want %d nodes, %d unschedulable, %d relaxed", describe(r), relaxed, tc.nodes, tc.unschedulable, tc.relaxed)
			}
			for _, e := range r.Unschedulable {
				if !strings.Contains(e.Reason, "minValues") || !strings.Contains(e.Reason, tc.pool.Requirements[0].Key) {
					t.Errorf("reason %q, want one naming minValues and %s", e.Reason, tc.pool.Requirements[0].Key)
				}
			}
		})
	}
}

// TestMixedConstraintsWithMinValues: the seeded random workloads, with minValues on every pool,
// under each policy, have every plan verified by the checker.
func TestMixedConstraintsWithMinValues(t *testing.T) {
	for _, policy := range []scheduling.MinValuesPolicy{scheduling.MinValuesStrict, scheduling.MinValuesBestEffort} {
		for seed := int64(1); seed <= 20; seed++ {
			t.Run(fmt.Sprintf("%s/%d", policy, seed), func(t *testing.T) {
				in := workloads.Mixed(seed)
				for i := range in.Pools {
					// Spreads over the instance type pin many nodes to one: Strict refuses them,
					// BestEffort relaxes them.
					in.Pools[i].MinValues = map[string]int{corev1.LabelInstanceTypeStable: 2}
					in.Pools[i].MinValuesPolicy = policy
				}
				r := scheduling.Schedule(in)
				verified(t, in, r)
				if len(r.Bindings) == 0 {
					t.Error("no pod placed")
				}
			})
		}
	}
}
