package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// valueOf is the value of key a node will carry whatever it launches as, or "".
func valueOf(in scheduling.Input, r *scheduling.Results, nodeName, key string) string {
	for _, n := range in.Nodes {
		if n.Node.Name == nodeName {
			return n.Node.Labels[key]
		}
	}
	for _, n := range r.NewNodes {
		if n.Hostname != nodeName {
			continue
		}
		for _, req := range n.Requirements {
			if req.Key == key && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
		values := sets.New[string]()
		for _, it := range n.InstanceTypes {
			v := it.Labels[key]
			if key == corev1.LabelInstanceTypeStable {
				v = it.Name
			}
			values.Insert(v)
		}
		if values.Len() == 1 {
			return values.UnsortedList()[0]
		}
	}
	return ""
}

// podsByValue counts bound pods by the value of key on their node.
func podsByValue(in scheduling.Input, r *scheduling.Results, key string) map[string]int {
	out := map[string]int{}
	for _, b := range r.Bindings {
		out[valueOf(in, r, b.NodeName, key)]++
	}
	return out
}

func wantCounts(t *testing.T, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("pods by domain %v, want %v", got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("pods by domain %v, want %v", got, want)
			return
		}
	}
}

func spread(key string, when corev1.UnsatisfiableConstraintAction, selector map[string]string, edit func(*corev1.TopologySpreadConstraint)) []corev1.TopologySpreadConstraint {
	c := builders.Spread(key, when, selector)
	if edit != nil {
		edit(&c)
	}
	return []corev1.TopologySpreadConstraint{c}
}

func weighted(term corev1.PodAffinityTerm) []corev1.WeightedPodAffinityTerm {
	return []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: term}}
}

// preferring builds n pods with preferred pod affinity and anti-affinity terms.
func preferring(n int, o builders.PodOptions, affinity, antiAffinity []corev1.WeightedPodAffinityTerm) []*corev1.Pod {
	pods := builders.Pods(n, o)
	for _, pod := range pods {
		if pod.Spec.Affinity == nil {
			pod.Spec.Affinity = &corev1.Affinity{}
		}
		if affinity != nil {
			pod.Spec.Affinity.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: affinity}
		}
		if antiAffinity != nil {
			pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: antiAffinity}
		}
	}
	return pods
}

func labelledNode(name string, labels map[string]string, cpu string) scheduling.Node {
	l := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	return scheduling.Node{Node: builders.Node(builders.NodeOptions{Name: name, Labels: l, Allocatable: builders.Resources("cpu", cpu, "memory", "8Gi", "pods", "110")})}
}

func TestTopologyKeysAndPreferences(t *testing.T) {
	web := map[string]string{"app": "web"}
	cases := []struct {
		name   string
		input  func() scheduling.Input
		expect func(t *testing.T, in scheduling.Input, r *scheduling.Results)
	}{
		{
			name: "spread over capacity types",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(6, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, TopologySpread: spread(v1alpha5.CapacityTypeLabelKey, corev1.DoNotSchedule, web, nil)}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, v1alpha5.CapacityTypeLabelKey), map[string]int{v1alpha5.CapacityTypeSpot: 3, v1alpha5.CapacityTypeOnDemand: 3})
			},
		},
		{
			name: "spread over zones and capacity types together",
			input: func() scheduling.Input {
				constraints := append(spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, nil), spread(v1alpha5.CapacityTypeLabelKey, corev1.DoNotSchedule, web, nil)...)
				return scheduling.Input{Pods: builders.Pods(6, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, TopologySpread: constraints}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					// Without a capacity-type label this node is no domain of either constraint.
					Nodes: []scheduling.Node{labelledNode("unmanaged", map[string]string{corev1.LabelTopologyZone: "zone-1"}, "8")}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, v1alpha5.CapacityTypeLabelKey), map[string]int{v1alpha5.CapacityTypeSpot: 3, v1alpha5.CapacityTypeOnDemand: 3})
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 2, "zone-2": 2, "zone-3": 2})
			},
		},
		{
			name: "anti-affinity over capacity types has two domains",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(v1alpha5.CapacityTypeLabelKey, web)}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantUnschedulable(t, r, 1, v1alpha5.CapacityTypeLabelKey)
				wantCounts(t, podsByValue(in, r, v1alpha5.CapacityTypeLabelKey), map[string]int{v1alpha5.CapacityTypeSpot: 1, v1alpha5.CapacityTypeOnDemand: 1})
			},
		},
		{
			name: "anti-affinity over instance types narrows each node to one type",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(3, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelInstanceTypeStable, web)}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 3)
				got := podsByValue(in, r, corev1.LabelInstanceTypeStable)
				if len(got) != 3 || got[""] != 0 {
					t.Errorf("pods by instance type %v, want three types one pod each", got)
				}
			},
		},
		{
			name: "pod affinity over architecture",
			input: func() scheduling.Input {
				db := builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), Labels: map[string]string{"app": "db"}, NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}})
				return scheduling.Input{Pods: append(builders.Pods(3, builders.PodOptions{Requests: requests("1", "1Gi"), PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelArchStable, map[string]string{"app": "db"})}}), db),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelArchStable), map[string]int{"arm64": 4})
			},
		},
		{
			name: "spread over a label the provisioners set",
			input: func() scheduling.Input {
				a := provisioner(builders.ProvisionerOptions{Name: "team-a", Labels: map[string]string{"example.com/team": "a"}})
				b := provisioner(builders.ProvisionerOptions{Name: "team-b", Labels: map[string]string{"example.com/team": "b"}})
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, TopologySpread: spread("example.com/team", corev1.DoNotSchedule, web, nil)}),
					Pools: []scheduling.Pool{a, b}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, "example.com/team"), map[string]int{"a": 2, "b": 2})
			},
		},
		{
			name: "existing nodes' labels are domains",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, TopologySpread: spread("example.com/rack", corev1.DoNotSchedule, web, nil)}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
					Nodes: []scheduling.Node{
						labelledNode("rack-1-node", map[string]string{"example.com/rack": "1"}, "2"),
						labelledNode("rack-2-node", map[string]string{"example.com/rack": "2"}, "4"),
					}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				// New nodes carry no rack label, so the pods can only go to the racks.
				wantNodes(t, r, 0)
				wantCounts(t, podsByValue(in, r, "example.com/rack"), map[string]int{"1": 2, "2": 2})
			},
		},
		{
			name: "preferred pod anti-affinity is honoured when possible",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: preferring(3, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web}, nil, weighted(builders.AffinityTerm(corev1.LabelHostname, web))),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantNodes(t, r, 3) },
		},
		{
			name: "preferred pod anti-affinity is relaxed when it cannot be met",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: preferring(3, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web}, nil, weighted(builders.AffinityTerm(corev1.LabelHostname, web))),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{Limits: builders.Resources("cpu", "2")})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 1)
				wantUnschedulable(t, r, 0, "")
			},
		},
		{
			name: "preferred pod affinity is honoured when possible",
			input: func() scheduling.Input {
				db := builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), Labels: map[string]string{"app": "db"}, NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "zone-2")}})
				return scheduling.Input{Pods: append(preferring(3, builders.PodOptions{Requests: requests("1", "1Gi")}, weighted(builders.AffinityTerm(corev1.LabelTopologyZone, map[string]string{"app": "db"})), nil), db),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-2": 4})
			},
		},
		{
			name: "preferred pod affinity to pods that do not exist is relaxed",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: preferring(2, builders.PodOptions{Requests: requests("1", "1Gi")}, weighted(builders.AffinityTerm(corev1.LabelTopologyZone, map[string]string{"app": "db"})), nil),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantUnschedulable(t, r, 0, "") },
		},
		{
			name: "ScheduleAnyway zone spread is honoured when possible",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(6, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, corev1.ScheduleAnyway, web, nil)}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 2, "zone-2": 2, "zone-3": 2})
			},
		},
		{
			name: "minDomains above the domains there are treats the minimum as zero",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(5, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](5) })}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantUnschedulable(t, r, 2, "zone")
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 1, "zone-2": 1, "zone-3": 1})
			},
		},
		{
			name: "nodeAffinityPolicy Honor: zones the pod cannot use are no domains",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, nil),
					NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "zone-2", "zone-3")}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-2": 2, "zone-3": 2})
			},
		},
		{
			name: "nodeAffinityPolicy Ignore: every zone is a domain",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web,
					TopologySpread: spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, func(c *corev1.TopologySpreadConstraint) {
						c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
					}),
					NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "zone-2", "zone-3")}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				// zone-1 stays empty, so each other zone may hold one pod more.
				wantUnschedulable(t, r, 2, "zone")
			},
		},
		{
			name: "nodeTaintsPolicy Honor: zones only tainted nodes reach are no domains",
			input: func() scheduling.Input {
				return taintedZoneInput(ptr.To(corev1.NodeInclusionPolicyHonor))
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 2, "zone-2": 2})
			},
		},
		{
			name: "nodeTaintsPolicy Ignore: tainted nodes' zones are domains",
			input: func() scheduling.Input {
				return taintedZoneInput(nil)
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantUnschedulable(t, r, 2, "zone")
			},
		},
		{
			name: "matchLabelKeys spread each version on its own",
			input: func() scheduling.Input {
				var pods []*corev1.Pod
				for _, version := range []string{"v1", "v2"} {
					pods = append(pods, builders.Pods(2, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "web", "version": version},
						TopologySpread: spread(corev1.LabelHostname, corev1.DoNotSchedule, web, func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"version"} })})...)
				}
				return scheduling.Input{Pods: pods, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantNodes(t, r, 2) },
		},
		{
			name: "matchLabelKeys of pod anti-affinity",
			input: func() scheduling.Input {
				var pods []*corev1.Pod
				for _, version := range []string{"v1", "v2"} {
					term := builders.AffinityTerm(corev1.LabelHostname, web)
					term.MatchLabelKeys = []string{"version"}
					pods = append(pods, builders.Pods(2, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: map[string]string{"app": "web", "version": version}, PodAntiAffinity: []corev1.PodAffinityTerm{term}})...)
				}
				return scheduling.Input{Pods: pods, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantNodes(t, r, 2) },
		},
		{
			name: "a topology key no node carries leaves the pod unschedulable",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1", "1Gi"), PodAffinity: []corev1.PodAffinityTerm{{TopologyKey: "example.com/rack", LabelSelector: &metav1.LabelSelector{}}}}),
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantUnschedulable(t, r, 1, "") },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			r := scheduling.Schedule(in)
			for _, err := range check.Verify(in, r) {
				t.Error(err)
			}
			tc.expect(t, in, r)
		})
	}
}

// taintedZoneInput has zone-3 reachable only by a tainted provisioner, and four pods spread
// over zones with the given nodeTaintsPolicy that do not tolerate the taint.
func taintedZoneInput(policy *corev1.NodeInclusionPolicy) scheduling.Input {
	web := map[string]string{"app": "web"}
	open := provisioner(builders.ProvisionerOptions{Name: "open", Requirements: []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"zone-1", "zone-2"}}}})
	tainted := provisioner(builders.ProvisionerOptions{Name: "tainted", Taints: []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}},
		Requirements: []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"zone-3"}}}})
	return scheduling.Input{Pods: builders.Pods(4, builders.PodOptions{Requests: requests("100m", "100Mi"), Labels: web,
		TopologySpread: spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = policy })}),
		Pools: []scheduling.Pool{open, tainted}}
}

// TestCountedPodsGoWhereTheirNodeIsCheapest: a pod that a spread over zones or capacity types
// only counts (it carries no term of its own on the key) opens its node in the zone, or as the
// capacity type, it launches cheapest in; the spreading pods were placed first, against the
// counts then, and the plan binds in its order. Where the values price alike, such pods balance
// the counts as before. The spreading pods, whose counts tie, take the cheapest value of those.
func TestCountedPodsGoWhereTheirNodeIsCheapest(t *testing.T) {
	web := map[string]string{"app": "web"}
	// Types each of these pods fills alone: on demand only, priced per zone; and spot at 40 %
	// of on demand in every zone.
	zonal := func(prices ...float64) *cloudprovider.InstanceType {
		it := workloads.InstanceType("one-pod", "amd64", 2, 4, 10, 0)
		it.Offerings = nil
		for i, z := range workloads.Zones {
			it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: v1alpha5.CapacityTypeOnDemand, Price: prices[i], Available: true})
		}
		return it
	}
	spotAndOnDemand := workloads.InstanceType("one-pod", "amd64", 2, 4, 10, 0.1)
	for _, tc := range []struct {
		name               string
		key                string
		it                 *cloudprovider.InstanceType
		counted, spreading map[string]int
	}{
		{"zones priced differently", corev1.LabelTopologyZone, zonal(0.3, 0.1, 0.2), map[string]int{"zone-2": 3}, map[string]int{"zone-2": 3}},
		{"zones priced alike", corev1.LabelTopologyZone, zonal(0.1, 0.1, 0.1), map[string]int{"zone-1": 1, "zone-2": 1, "zone-3": 1}, map[string]int{"zone-1": 3}},
		{"capacity types", v1alpha5.CapacityTypeLabelKey, spotAndOnDemand, map[string]int{v1alpha5.CapacityTypeSpot: 3}, map[string]int{v1alpha5.CapacityTypeSpot: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spreading := builders.Pods(3, builders.PodOptions{Requests: requests("1500m", "1Gi"), Labels: map[string]string{"app": "spreading"},
				TopologySpread: spread(tc.key, corev1.DoNotSchedule, web, nil)})
			counted := builders.Pods(3, builders.PodOptions{Requests: requests("1500m", "1Gi"), Labels: web})
			in := scheduling.Input{Pods: append(spreading, counted...),
				Pools: []scheduling.Pool{scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "default"}), []*cloudprovider.InstanceType{tc.it})}}
			r := scheduling.Schedule(in)
			verifyWorkload(t, in, r)
			got := map[string]map[string]int{"web": {}, "spreading": {}}
			for _, b := range r.Bindings {
				got[b.Pod.Labels["app"]][valueOf(in, r, b.NodeName, tc.key)]++
			}
			wantCounts(t, got["web"], tc.counted)
			wantCounts(t, got["spreading"], tc.spreading)
		})
	}
}

// TestCountedPodsPriceTheTypesTheyMayLaunchAs: a pod a zone spread only counts goes to the zone
// where its node is cheapest as a type it may launch as: one its node selector allows, one within
// the pool's limits. (The code before priced the zones by the node's first type that held the
// pod, which the selector or the limits excluded: it chose zone-1, where that type is cheapest
// and the type the node then launched as dearest; the limits case failed until the limits were
// weighed too.)
func TestCountedPodsPriceTheTypesTheyMayLaunchAs(t *testing.T) {
	web := map[string]string{"app": "web"}
	typeIn := func(name string, cpu int64, prices ...float64) *cloudprovider.InstanceType {
		it := workloads.InstanceType(name, "amd64", cpu, 4, 10, 0)
		it.Offerings = nil
		for i, z := range workloads.Zones {
			if prices[i] > 0 {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: v1alpha5.CapacityTypeOnDemand, Price: prices[i], Available: true})
			}
		}
		return it
	}
	for _, tc := range []struct {
		name         string
		types        []*cloudprovider.InstanceType
		nodeSelector map[string]string
		limits       corev1.ResourceList
		// spreadingCPU is each spreading pod's: they fill the nodes they open, so the counted
		// pod opens its own.
		spreadingCPU string
	}{
		{"the node selector allows one type", []*cloudprovider.InstanceType{typeIn("small", 2, 0.1, 0, 0), typeIn("large", 2, 0.3, 0.2, 0.25)},
			map[string]string{corev1.LabelInstanceTypeStable: "large"}, nil, "1500m"},
		// The spreading pods fill one "big" in zone-1, leaving 2 of the limit's 6 cores.
		{"the limits allow the smaller type", []*cloudprovider.InstanceType{typeIn("big", 4, 0.05, 0.3, 0.3), typeIn("small", 2, 0.3, 0.1, 0.15)},
			nil, builders.Resources("cpu", "6"), "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spreading := builders.Pods(3, builders.PodOptions{Requests: requests(tc.spreadingCPU, "1Gi"), Labels: map[string]string{"app": "spreading"},
				TopologySpread: spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, nil)})
			counted := builders.Pods(1, builders.PodOptions{Requests: requests("1500m", "1Gi"), Labels: web, NodeSelector: tc.nodeSelector})
			in := scheduling.Input{Pods: append(spreading, counted...),
				Pools: []scheduling.Pool{scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "default", Limits: tc.limits}), tc.types)}}
			r := scheduling.Schedule(in)
			verifyWorkload(t, in, r)
			got := map[string]int{}
			for _, b := range r.Bindings {
				if b.Pod.Labels["app"] == "web" {
					got[valueOf(in, r, b.NodeName, corev1.LabelTopologyZone)]++
				}
			}
			wantCounts(t, got, map[string]int{"zone-2": 1})
		})
	}
}
