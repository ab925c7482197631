package scheduling_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// nodePool is a NodePool of the workload catalogue with the weight and changes given.
func nodePool(name string, weight int32, change func(*v1.NodePool)) scheduling.Pool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		}},
	}}
	if weight != 0 {
		np.Spec.Weight = ptr.To(weight)
	}
	if change != nil {
		change(np)
	}
	return scheduling.FromNodePool(np, workloads.InstanceTypes())
}

func TestFromNodePool(t *testing.T) {
	pool := nodePool("gpu", 30, func(np *v1.NodePool) {
		np.Spec.Template.Labels = map[string]v1.LabelValue{"team": "ml"}
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: "karpenter.k8s.aws/instance-cpu", Operator: v1.NodeSelectorOpGte, Values: []string{"4"}},
			{Key: "karpenter.k8s.aws/instance-memory", Operator: v1.NodeSelectorOpLte, Values: []string{"8192"}},
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}, MinValues: ptr.To(1)},
		}
		np.Spec.Template.Spec.Taints = []v1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Template.Spec.StartupTaints = []v1.Taint{{Key: "agent", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: builders.Resources("cpu", "100")[corev1.ResourceCPU]}
	})
	if pool.Key != pools.NodePool("gpu") || pool.Weight != 30 || pool.Labels["team"] != "ml" {
		t.Errorf("key %v weight %d labels %v", pool.Key, pool.Weight, pool.Labels)
	}
	want := []corev1.NodeSelectorRequirement{
		{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}},
		{Key: "karpenter.k8s.aws/instance-memory", Operator: corev1.NodeSelectorOpLt, Values: []string{"8193"}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
	}
	if !slices.EqualFunc(pool.Requirements, want, func(a, b corev1.NodeSelectorRequirement) bool {
		return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
	}) {
		t.Errorf("requirements %v, want %v", pool.Requirements, want)
	}
	// Pods need not tolerate startup taints: they are not the pool's.
	if len(pool.Taints) != 1 || pool.Taints[0].Key != "gpu" {
		t.Errorf("taints %v, want the template's taints only", pool.Taints)
	}
	if q := pool.Limits[corev1.ResourceCPU]; q.String() != "100" {
		t.Errorf("limits %v", pool.Limits)
	}
}

// TestPoolsAreTakenByWeight: a pod goes to the highest-weighted pool that can take it, however
// dear; among equal weights, to the cheapest node; a pool it cannot use (a taint it does not
// tolerate) passes it on to the next weight. Provisioners weigh 0.
func TestPoolsAreTakenByWeight(t *testing.T) {
	dear := func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"large"}}}
	}
	tainted := func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []v1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, tc := range []struct {
		name  string
		pools []scheduling.Pool
		want  pools.Key
		typ   string
	}{
		{"the heavier pool, though dearer", []scheduling.Pool{nodePool("cheap", 10, nil), nodePool("dear", 50, dear)}, pools.NodePool("dear"), "large"},
		{"equal weights: the cheapest node", []scheduling.Pool{nodePool("cheap", 10, nil), nodePool("dear", 10, dear)}, pools.NodePool("cheap"), "small"},
		{"a heavier pool the pod cannot use passes it on", []scheduling.Pool{nodePool("tainted", 90, tainted), nodePool("dear", 50, dear), nodePool("cheap", 10, nil)}, pools.NodePool("dear"), "large"},
		{"a NodePool of any weight before a Provisioner", []scheduling.Pool{provisioner(builders.ProvisionerOptions{Name: "dear"}), nodePool("dear", 1, dear)}, pools.NodePool("dear"), "large"},
		{"unweighted NodePools and Provisioners: the cheapest", []scheduling.Pool{provisioner(builders.ProvisionerOptions{Name: "cheap"}), nodePool("dear", 0, dear)}, pools.Provisioner("cheap"), "small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{Pods: builders.Pods(1, builders.PodOptions{Requests: requests("1", "1Gi")}), Pools: tc.pools}
			r := scheduling.Schedule(in)
			if !verified(t, in, r) {
				t.FailNow()
			}
			if len(r.NewNodes) != 1 || r.NewNodes[0].Pool != tc.want || r.NewNodes[0].InstanceTypes[0].Name != tc.typ {
				t.Fatalf("new nodes %v, want one of %s as %s", describe(r), tc.want, tc.typ)
			}
			if got := labelOf(r.NewNodes[0], tc.want.LabelKey); got != tc.want.Name {
				t.Errorf("node requires %s=%q, want %q", tc.want.LabelKey, got, tc.want.Name)
			}
		})
	}
}

// TestNodeLimitBoundsNewNodes: limits.nodes counts nodes, those already there included.
func TestNodeLimitBoundsNewNodes(t *testing.T) {
	pool := nodePool("capped", 0, func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{v1.LimitNodes: builders.Resources("nodes", "3")["nodes"]}
		np.Status.Resources = corev1.ResourceList{v1.LimitNodes: builders.Resources("nodes", "1")["nodes"]}
	})
	// Each pod fills a node of the largest type alone: five nodes wanted, two allowed.
	in := scheduling.Input{Pods: builders.Pods(5, builders.PodOptions{Requests: requests("10", "20Gi")}), Pools: []scheduling.Pool{pool}}
	r := scheduling.Schedule(in)
	if !verified(t, in, r) {
		t.FailNow()
	}
	if len(r.NewNodes) != 2 || len(r.Unschedulable) != 3 {
		t.Fatalf("%d new nodes and %d pods unschedulable, want 2 and 3", len(r.NewNodes), len(r.Unschedulable))
	}
}

func describe(r *scheduling.Results) string {
	var parts []string
	for _, n := range r.NewNodes {
		parts = append(parts, n.Pool.String()+" "+n.InstanceTypes[0].Name)
	}
	for _, e := range r.Unschedulable {
		parts = append(parts, "unschedulable: "+e.Reason)
	}
	return strings.Join(parts, "; ")
}

func labelOf(n *scheduling.NewNode, key string) string {
	for _, r := range n.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// TestPoolChosenLabels: a NodePool requirement on a key no instance type carries (upstream's
// "capacity-spread" pattern) is a label the pool chooses per node, among the values it allows,
// and a domain topology spreads count; a key in a reserved domain is never chosen.
func TestPoolChosenLabels(t *testing.T) {
	const spread = "capacity-spread"
	requiring := func(key string, operator corev1.NodeSelectorOperator, values ...string) func(*v1.NodePool) {
		return func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: key, Operator: operator, Values: values}}
		}
	}
	// Each pod takes more than half the largest type: one node per pod.
	large := requests("9", "8Gi")
	app := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name  string
		pools []scheduling.Pool
		pods  builders.PodOptions
		count int
		// want are the nodes' values of key by pool, in plan order; empty: every pod unschedulable.
		key  string
		want map[pools.Key][]string
	}{
		{
			name: "nodes no pod pins take the values in turn", key: spread,
			pools: []scheduling.Pool{nodePool("spread", 0, requiring(spread, corev1.NodeSelectorOpIn, "3", "1", "2"))},
			pods:  builders.PodOptions{Requests: large}, count: 4,
			want: map[pools.Key][]string{pools.NodePool("spread"): {"1", "2", "3", "1"}},
		},
		{
			name: "a pod selecting a value gets it", key: spread,
			pools: []scheduling.Pool{nodePool("spread", 0, requiring(spread, corev1.NodeSelectorOpIn, "1", "2", "3"))},
			pods:  builders.PodOptions{Requests: large, NodeSelector: map[string]string{spread: "3"}}, count: 2,
			want: map[pools.Key][]string{pools.NodePool("spread"): {"3", "3"}},
		},
		{
			// Upstream's ratio: spot takes four domains of five, on-demand one; pods spread over
			// the five with a skew of one land four to one.
			name: "spread over two pools' values: the capacity-spread ratio", key: spread,
			pools: []scheduling.Pool{
				nodePool("spot", 0, requiring(spread, corev1.NodeSelectorOpIn, "2", "3", "4", "5")),
				nodePool("on-demand", 0, requiring(spread, corev1.NodeSelectorOpIn, "1")),
			},
			pods: builders.PodOptions{Requests: large, Labels: app, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(spread, corev1.DoNotSchedule, app)}}, count: 10,
			want: map[pools.Key][]string{pools.NodePool("spot"): {"2", "2", "3", "3", "4", "4", "5", "5"}, pools.NodePool("on-demand"): {"1", "1"}},
		},
		{
			name: "Exists: the least integer", key: "example.com/team",
			pools: []scheduling.Pool{nodePool("team", 0, requiring("example.com/team", corev1.NodeSelectorOpExists))},
			pods:  builders.PodOptions{Requests: large}, count: 1,
			want: map[pools.Key][]string{pools.NodePool("team"): {"0"}},
		},
		{
			name: "a reserved key no instance type carries is not chosen", key: "karpenter.k8s.aws/instance-gpu-count",
			pools: []scheduling.Pool{nodePool("gpu", 0, requiring("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpExists))},
			pods:  builders.PodOptions{Requests: large}, count: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{Pods: builders.Pods(tc.count, tc.pods), Pools: tc.pools}
			r := scheduling.Schedule(in)
			if !verified(t, in, r) {
				t.FailNow()
			}
			if tc.want == nil {
				if len(r.NewNodes) != 0 || len(r.Unschedulable) != tc.count {
					t.Fatalf("%s, want every pod unschedulable", describe(r))
				}
				return
			}
			got := map[pools.Key][]string{}
			for _, n := range r.NewNodes {
				if labelOf(n, tc.key) != n.Labels[tc.key] {
					t.Errorf("node %s: label %s=%q, requirement %q", n.Hostname, tc.key, n.Labels[tc.key], labelOf(n, tc.key))
				}
				got[n.Pool] = append(got[n.Pool], n.Labels[tc.key])
			}
			for pool := range got {
				if pool != pools.NodePool("spread") {
					slices.Sort(got[pool])
				}
			}
			if len(r.Unschedulable) != 0 || !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("values by pool %v (%s), want %v", got, describe(r), tc.want)
			}
		})
	}
}
