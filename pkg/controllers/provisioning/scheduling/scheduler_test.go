package scheduling_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func provisioner(o builders.ProvisionerOptions) scheduling.Pool {
	if o.Name == "" {
		o.Name = "default"
	}
	return scheduling.FromProvisioner(builders.Provisioner(o), workloads.InstanceTypes())
}

func requests(cpu, memory string) corev1.ResourceList {
	return builders.Resources("cpu", cpu, "memory", memory)
}

func existingNode(name, zone, cpu, memory string, pods ...*corev1.Pod) scheduling.Node {
	return scheduling.Node{
		Node: builders.Node(builders.NodeOptions{
			Name:        name,
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone},
			Allocatable: builders.Resources("cpu", cpu, "memory", memory, "pods", "110"),
		}),
		Pods: pods,
	}
}

// zoneOf is the zone a new node is pinned to, or "".
func zoneOf(n *scheduling.NewNode) string {
	for _, r := range n.Requirements {
		if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

func podsPerZone(r *scheduling.Results) map[string]int {
	out := map[string]int{}
	for _, n := range r.NewNodes {
		out[zoneOf(n)] += len(n.Pods)
	}
	return out
}

func TestScheduling(t *testing.T) {
	cases := []struct {
		name  string
		input func() scheduling.Input
		// expect checks what the checker cannot know: that the plan is the intended one.
		expect func(t *testing.T, r *scheduling.Results)
	}{
		{
			name: "cheapest instance type that holds the pods, not the largest",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(2, builders.PodOptions{Requests: requests("500m", "1Gi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				wantNodes(t, r, 1)
				wantFirstType(t, r.NewNodes[0], "small")
			},
		},
		{
			name: "init containers and overhead count in effective requests",
			input: func() scheduling.Input {
				p := builders.Pod(builders.PodOptions{
					Requests:       requests("500m", "1Gi"),
					InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "2500m")}}},
				})
				p.Spec.Overhead = builders.Resources("cpu", "500m")
				return scheduling.Input{Pods: []*corev1.Pod{p}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				// max(500m, 2500m) + 500m = 3 cores: more than small's 1.9 allocatable.
				wantFirstType(t, r.NewNodes[0], "arm-medium")
			},
		},
		{
			name: "nodeSelector",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1", "1Gi"), NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				for _, it := range r.NewNodes[0].InstanceTypes {
					if it.Labels[corev1.LabelArchStable] != "amd64" {
						t.Errorf("instance type %s is not amd64", it.Name)
					}
				}
			},
		},
		{
			name: "required node affinity pins the zone",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("1", "1Gi"), NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "zone-2")}}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				if got := podsPerZone(r)["zone-2"]; got != 3 {
					t.Errorf("%d pods in zone-2, want 3", got)
				}
			},
		},
		{
			name: "preferred node affinity is honoured when possible",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(2, builders.PodOptions{Requests: requests("1", "1Gi"), NodePreferences: []corev1.PreferredSchedulingTerm{builders.Preferred(10, builders.In(corev1.LabelTopologyZone, "zone-3"))}}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				if got := podsPerZone(r)["zone-3"]; got != 2 {
					t.Errorf("%d pods in zone-3, want 2", got)
				}
			},
		},
		{
			name: "preferred node affinity is relaxed when it cannot be met",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(2, builders.PodOptions{Requests: requests("1", "1Gi"), NodePreferences: []corev1.PreferredSchedulingTerm{
					builders.Preferred(10, builders.In(corev1.LabelTopologyZone, "nowhere")), builders.Preferred(5, builders.In(corev1.LabelArchStable, "arm64"))}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				wantNodes(t, r, 1)
				wantFirstType(t, r.NewNodes[0], "arm-medium")
			},
		},
		{
			name: "taints need tolerations",
			input: func() scheduling.Input {
				tainted := provisioner(builders.ProvisionerOptions{
					Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				})
				tolerating := builders.Pod(builders.PodOptions{
					Requests:    requests("1", "1Gi"),
					Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				})
				return scheduling.Input{Pods: []*corev1.Pod{tolerating, builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi")})}, Pools: []scheduling.Pool{tainted}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				wantUnschedulable(t, r, 1, "taints")
				wantNodes(t, r, 1)
			},
		},
		{
			name: "zone topology spread",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(7, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: map[string]string{"app": "web"}, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": "web"})}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				for z, n := range podsPerZone(r) {
					if n < 2 || n > 3 {
						t.Errorf("%d pods in %s, want 2 or 3", n, z)
					}
				}
			},
		},
		{
			name: "hostname topology spread",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "web"}, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelHostname, corev1.DoNotSchedule, map[string]string{"app": "web"})}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantNodes(t, r, 4) },
		},
		{
			name: "ScheduleAnyway spread is a preference",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "web"}, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelHostname, corev1.ScheduleAnyway, map[string]string{"app": "web"})}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{Limits: builders.Resources("cpu", "2")})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				// The limit allows one node; the preference gives way rather than the pods.
				wantNodes(t, r, 1)
				wantUnschedulable(t, r, 0, "")
			},
		},
		{
			name: "zone pod affinity",
			input: func() scheduling.Input {
				db := builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), Labels: map[string]string{"app": "db"}, NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "zone-3")}})
				return scheduling.Input{Pods: append(builders.Pods(4, builders.PodOptions{Requests: requests("1", "1Gi"), PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, map[string]string{"app": "db"})}}), db),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				if got := podsPerZone(r)["zone-3"]; got != 5 {
					t.Errorf("%d pods in zone-3, want 5", got)
				}
			},
		},
		{
			name: "hostname pod anti-affinity",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "nginx"}, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "nginx"})}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantNodes(t, r, 3) },
		},
		{
			name: "zone pod anti-affinity leaves pods that cannot fit unschedulable",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "nginx"}, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, map[string]string{"app": "nginx"})}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantUnschedulable(t, r, 1, "zone") },
		},
		{
			name: "existing pods' anti-affinity keeps new pods away",
			input: func() scheduling.Input {
				guard := builders.Pod(builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "guard"}, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "web"})}})
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "web"}}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					Nodes: []scheduling.Node{existingNode("node-a", "zone-1", "4", "8Gi", guard)}}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantNodes(t, r, 1) },
		},
		{
			name: "existing nodes with room are filled first",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(5, builders.PodOptions{Requests: requests("1", "1Gi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					Nodes: []scheduling.Node{existingNode("node-a", "zone-1", "3", "8Gi", builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi")}))}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				onExisting := 0
				for _, b := range r.Bindings {
					if b.NodeName == "node-a" {
						onExisting++
					}
				}
				if onExisting != 2 {
					t.Errorf("%d pods on the existing node, want 2", onExisting)
				}
			},
		},
		{
			name: "provisioner requirements restrict capacity type and price",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1", "1Gi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{
					Requirements: []v1alpha5.NodeSelectorRequirement{{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}}},
				})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				if r.NewNodes[0].Price != 0.1 {
					t.Errorf("price %v, want the on-demand 0.1", r.NewNodes[0].Price)
				}
			},
		},
		{
			name: "limits bound the capacity launched",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("1500m", "1Gi"), Labels: map[string]string{"app": "nginx"}, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "nginx"})}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{Limits: builders.Resources("cpu", "5")})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				wantNodes(t, r, 2)
				wantUnschedulable(t, r, 2, "limits")
			},
		},
		{
			name: "pods per node",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("100m", "100Mi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{
					Requirements: []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"tiny-pods"}}},
				})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantNodes(t, r, 2) },
		},
		{
			name: "daemonset overhead is reserved on new nodes",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1500m", "1Gi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					DaemonSetPods: builders.Pods(1, builders.PodOptions{Requests: requests("500m", "100Mi")})}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantFirstType(t, r.NewNodes[0], "arm-medium") },
		},
		{
			name: "a daemonset that selects an arch is reserved only on instance types of that arch",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1500m", "1Gi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					DaemonSetPods: builders.Pods(1, builders.PodOptions{Requests: requests("500m", "100Mi"), NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}})}
			},
			// Were it reserved on every type, small (1,900m allocatable) would not hold the pod.
			expect: func(t *testing.T, r *scheduling.Results) { wantFirstType(t, r.NewNodes[0], "small") },
		},
		{
			name: "a daemonset that selects instance types takes its room from those types only",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1500m", "1Gi")}), Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					DaemonSetPods: builders.Pods(1, builders.PodOptions{Requests: requests("3", "100Mi"), NodeRequirements: []corev1.NodeSelectorRequirement{
						{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"medium", "arm-medium"}}}})}
			},
			// The types it selects keep 900m for pods: options no more.
			expect: func(t *testing.T, r *scheduling.Results) {
				wantFirstType(t, r.NewNodes[0], "small")
				for _, it := range r.NewNodes[0].InstanceTypes {
					if it.Name == "medium" || it.Name == "arm-medium" {
						t.Errorf("%s is an option, but the daemonset leaves it too little room", it.Name)
					}
				}
			},
		},
		{
			name: "provisioner-name nodeSelector",
			input: func() scheduling.Input {
				other := provisioner(builders.ProvisionerOptions{Name: "other"})
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{
					Requests:     requests("1", "1Gi"),
					NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: "other"},
				}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{}), other}}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				if r.NewNodes[0].Pool.Name != "other" {
					t.Errorf("pool %s, want other", r.NewNodes[0].Pool)
				}
			},
		},
		{
			name: "unsatisfiable pods get a reason",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: []*corev1.Pod{
					builders.Pod(builders.PodOptions{Requests: requests("64", "1Gi")}),
					builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), NodeSelector: map[string]string{"team": "x"}}),
					builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread("example.com/rack", corev1.DoNotSchedule, map[string]string{"a": "b"})}}),
				}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantUnschedulable(t, r, 3, "") },
		},
		{
			// A zone-affinity group needs only one zone, not one node: piling it onto the one
			// type large enough for the whole group costs far more than many small nodes.
			name: "zone affinity group larger than any mid-size node spans small nodes, not the huge dear type",
			input: func() scheduling.Input {
				types := []*cloudprovider.InstanceType{workloads.InstanceType("huge", "amd64", 448, 6144, 700, 50)}
				for i := 0; i < 8; i++ {
					types = append(types, workloads.InstanceType(fmt.Sprintf("small-%d", i), "amd64", 2, 4, 10, 0.1+0.001*float64(i)))
				}
				cache := map[string]string{"app": "cache"}
				return scheduling.Input{
					Pods: builders.Pods(40, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: cache,
						PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, cache)}}),
					Pools: []scheduling.Pool{scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "default"}), types)},
				}
			},
			expect: func(t *testing.T, r *scheduling.Results) {
				wantUnschedulable(t, r, 0, "")
				// 1.9 allocatable cores each: one pod per small node.
				wantNodes(t, r, 40)
				for _, n := range r.NewNodes {
					if !strings.HasPrefix(n.InstanceTypes[0].Name, "small-") {
						t.Errorf("node %s launches as %s, want a small type", n.Hostname, n.InstanceTypes[0].Name)
					}
				}
				if zones := podsPerZone(r); len(zones) != 1 {
					t.Errorf("pods in zones %v, want one zone", zones)
				}
				if got, want := r.Price(), 40*0.107*0.4; got > want {
					t.Errorf("plan costs $%.2f/h, want at most 40 small spot nodes' $%.2f/h", got, want)
				}
			},
		},
		{
			name: "mixed workload",
			input: func() scheduling.Input {
				var ps []*corev1.Pod
				web, nginx, cache, batch := map[string]string{"app": "web"}, map[string]string{"app": "nginx"}, map[string]string{"app": "cache"}, map[string]string{"app": "batch"}
				ps = append(ps, builders.Pods(10, builders.PodOptions{Requests: requests("250m", "512Mi"), Labels: web, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web)}})...)
				ps = append(ps, builders.Pods(5, builders.PodOptions{Requests: requests("500m", "1Gi"), Labels: nginx, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, nginx)}})...)
				ps = append(ps, builders.Pods(6, builders.PodOptions{Requests: requests("1", "2Gi"), Labels: cache, PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, cache)}})...)
				ps = append(ps, builders.Pods(8, builders.PodOptions{Requests: requests("100m", "128Mi"), Labels: web})...)
				ps = append(ps, builders.Pods(4, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: batch, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelHostname, corev1.DoNotSchedule, batch)},
					NodePreferences: []corev1.PreferredSchedulingTerm{builders.Preferred(1, builders.In(corev1.LabelArchStable, "arm64"))}})...)
				return scheduling.Input{Pods: ps, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					Nodes:         []scheduling.Node{existingNode("node-a", "zone-1", "2", "4Gi", builders.Pod(builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web}))},
					DaemonSetPods: builders.Pods(1, builders.PodOptions{Requests: requests("100m", "64Mi")})}
			},
			expect: func(t *testing.T, r *scheduling.Results) { wantUnschedulable(t, r, 0, "") },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			input := tc.input()
			r := scheduling.Schedule(input)
			for _, err := range check.Verify(input, r) {
				t.Error(err)
			}
			tc.expect(t, r)
		})
	}
}

func wantNodes(t *testing.T, r *scheduling.Results, n int) {
	t.Helper()
	if len(r.NewNodes) != n {
		t.Errorf("%d new nodes, want %d", len(r.NewNodes), n)
	}
}

func wantFirstType(t *testing.T, n *scheduling.NewNode, name string) {
	t.Helper()
	if len(n.InstanceTypes) == 0 || n.InstanceTypes[0].Name != name {
		t.Errorf("cheapest instance type %v, want %s", n.InstanceTypes, name)
	}
}

func wantUnschedulable(t *testing.T, r *scheduling.Results, n int, reason string) {
	t.Helper()
	if len(r.Unschedulable) != n {
		t.Errorf("%d unschedulable pods, want %d: %v", len(r.Unschedulable), n, r.Unschedulable)
	}
	for _, e := range r.Unschedulable {
		if !strings.Contains(e.Reason, reason) {
			t.Errorf("reason %q does not mention %q", e.Reason, reason)
		}
	}
}

// checkerCatches schedules in, wants the checker to pass the plan, breaks the plan (and the
// input, if need be) with breakPlan, and wants the checker to reject it with an error that
// mentions want ("" for any).
func checkerCatches(t *testing.T, in scheduling.Input, what string, want string, breakPlan func(in *scheduling.Input, r *scheduling.Results)) {
	t.Helper()
	r := scheduling.Schedule(in)
	if errs := check.Verify(in, r); len(errs) != 0 {
		t.Fatalf("valid plan rejected: %v", errs)
	}
	breakPlan(&in, r)
	for _, err := range check.Verify(in, r) {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Errorf("%s not caught", what)
}

// TestCheckerCatchesViolations makes sure the checker is not vacuous: it must reject plans
// that break constraints.
func TestCheckerCatchesViolations(t *testing.T) {
	input := scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "nginx"}, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "nginx"})}}),
		Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
	// Put every pod on the first node.
	checkerCatches(t, input, "anti-affinity violation", "", func(_ *scheduling.Input, r *scheduling.Results) {
		r.Bindings[1].NodeName = r.Bindings[0].NodeName
	})
	checkerCatches(t, input, "instance type not offered by the provisioner", "", func(_ *scheduling.Input, r *scheduling.Results) {
		r.NewNodes[0].InstanceTypes = append(r.NewNodes[0].InstanceTypes[:0:0], workloads.InstanceTypes()[0])
	})
	checkerCatches(t, input, "lost pod", "", func(_ *scheduling.Input, r *scheduling.Results) {
		r.Unschedulable = nil
		r.Bindings = r.Bindings[1:]
	})
}

// TestProvisionerWithoutInstanceTypes: a provisioner none of whose instance types is compatible
// (or whose list is not read yet) takes no pod, with a reason, whatever the pod's terms narrow.
func TestProvisionerWithoutInstanceTypes(t *testing.T) {
	empty := provisioner(builders.ProvisionerOptions{})
	empty.InstanceTypes = nil
	spread := builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), Labels: map[string]string{"app": "a"},
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": "a"})}})
	pinned := builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "zone-2")}})
	r := scheduling.Schedule(scheduling.Input{Pods: []*corev1.Pod{spread, pinned}, Pools: []scheduling.Pool{empty}})
	if len(r.NewNodes) != 0 || len(r.Unschedulable) != 2 {
		t.Fatalf("%d new nodes, %d pods refused; want none and both", len(r.NewNodes), len(r.Unschedulable))
	}
	for _, e := range r.Unschedulable {
		if e.Reason == "" {
			t.Errorf("pod %s refused without a reason", e.Pod.Name)
		}
	}
}
