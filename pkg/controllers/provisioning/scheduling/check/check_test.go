package check_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// Two instance types, one per architecture, offered in two zones as spot and on-demand at one
// price each, so a plan's stated price is the type's.
var (
	amd = instanceType("amd", "amd64", 0.1)
	arm = instanceType("arm", "arm64", 0.2)
)

func instanceType(name, arch string, price float64) *cloudprovider.InstanceType {
	it := &cloudprovider.InstanceType{
		Name:     name,
		Labels:   map[string]string{corev1.LabelArchStable: arch},
		Capacity: builders.Resources("cpu", "4", "memory", "8Gi", "pods", "20"),
	}
	for _, z := range []string{"zone-1", "zone-2"} {
		for _, ct := range []string{v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand} {
			it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: ct, Price: price, Available: true})
		}
	}
	return it
}

var web = map[string]string{"app": "web"}

func pods(n int, o builders.PodOptions) []*corev1.Pod {
	o.Requests = builders.Resources("cpu", "100m", "memory", "100Mi")
	return builders.Pods(n, o)
}

// plan is a hand-made plan: new nodes by hostname with their requirements and instance types,
// and the node of each input pod, in binding order.
type plan struct {
	nodes map[string]newNode
	// bindings name, per input pod in order, its node.
	bindings []string
}

type newNode struct {
	types        []*cloudprovider.InstanceType
	requirements []corev1.NodeSelectorRequirement
}

func (p plan) results(in scheduling.Input) *scheduling.Results {
	r := &scheduling.Results{}
	byName := map[string]*scheduling.NewNode{}
	for _, name := range slices.Sorted(maps.Keys(p.nodes)) {
		n := p.nodes[name]
		nn := &scheduling.NewNode{Hostname: name, Pool: pools.Provisioner("default"), Requirements: n.requirements, InstanceTypes: n.types, Price: n.types[0].Offerings[0].Price}
		byName[name] = nn
		r.NewNodes = append(r.NewNodes, nn)
	}
	for i, name := range p.bindings {
		r.Bindings = append(r.Bindings, scheduling.Binding{Pod: in.Pods[i], NodeName: name})
		if nn := byName[name]; nn != nil {
			nn.Pods = append(nn.Pods, in.Pods[i])
		}
	}
	return r
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func input(ps []*corev1.Pod, nodes ...scheduling.Node) scheduling.Input {
	return scheduling.Input{Pods: ps, Nodes: nodes, Pools: []scheduling.Pool{{
		Key: pools.Provisioner("default"), InstanceTypes: []*cloudprovider.InstanceType{amd, arm},
	}}}
}

func existing(name string, labels map[string]string, taints ...corev1.Taint) scheduling.Node {
	l := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	n := builders.Node(builders.NodeOptions{Name: name, Labels: l, Allocatable: builders.Resources("cpu", "4", "memory", "8Gi", "pods", "20")})
	n.Spec.Taints = taints
	return scheduling.Node{Node: n}
}

func spread(key string, edit func(*corev1.TopologySpreadConstraint)) []corev1.TopologySpreadConstraint {
	c := builders.Spread(key, corev1.DoNotSchedule, web)
	if edit != nil {
		edit(&c)
	}
	return []corev1.TopologySpreadConstraint{c}
}

func TestVerifyTopology(t *testing.T) {
	spot, onDemand := in(v1alpha5.CapacityTypeLabelKey, v1alpha5.CapacityTypeSpot), in(v1alpha5.CapacityTypeLabelKey, v1alpha5.CapacityTypeOnDemand)
	z1, z2 := in(corev1.LabelTopologyZone, "zone-1"), in(corev1.LabelTopologyZone, "zone-2")
	one := func(types ...*cloudprovider.InstanceType) []*cloudprovider.InstanceType { return types }
	versioned := func(version string) *corev1.Pod {
		term := builders.AffinityTerm(corev1.LabelHostname, web)
		term.MatchLabelKeys = []string{"version"}
		return pods(1, builders.PodOptions{Labels: map[string]string{"app": "web", "version": version}, PodAntiAffinity: []corev1.PodAffinityTerm{term}})[0]
	}
	taint := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name  string
		input scheduling.Input
		plan  plan
		// want is a fragment of the expected error, or "" for a valid plan.
		want string
	}{
		{
			name:  "capacity-type spread, balanced",
			input: input(pods(2, builders.PodOptions{Labels: web, TopologySpread: spread(v1alpha5.CapacityTypeLabelKey, nil)})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{spot}}, "n2": {one(amd), []corev1.NodeSelectorRequirement{onDemand}}}, bindings: []string{"n1", "n2"}},
		},
		{
			// Domains are those of the nodes there are: an on-demand node makes on-demand one.
			name:  "capacity-type spread, skewed",
			input: input(pods(2, builders.PodOptions{Labels: web, TopologySpread: spread(v1alpha5.CapacityTypeLabelKey, nil)}), existing("old", map[string]string{v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{spot}}, "n2": {one(amd), []corev1.NodeSelectorRequirement{spot}}}, bindings: []string{"n1", "n2"}},
			want:  "skew 2",
		},
		{
			name:  "capacity-type spread on a node whose capacity type is not decided",
			input: input(pods(1, builders.PodOptions{Labels: web, TopologySpread: spread(v1alpha5.CapacityTypeLabelKey, nil)})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}}, bindings: []string{"n1"}},
			want:  "no known value",
		},
		{
			name:  "instance-type anti-affinity, distinct types",
			input: input(pods(2, builders.PodOptions{Labels: web, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelInstanceTypeStable, web)}})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}, "n2": {one(arm), nil}}, bindings: []string{"n1", "n2"}},
		},
		{
			name:  "instance-type anti-affinity, same type",
			input: input(pods(2, builders.PodOptions{Labels: web, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelInstanceTypeStable, web)}})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}, "n2": {one(amd), nil}}, bindings: []string{"n1", "n2"}},
			want:  "anti-affinity",
		},
		{
			name:  "instance-type anti-affinity on a node that may launch as either type",
			input: input(pods(2, builders.PodOptions{Labels: web, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelInstanceTypeStable, web)}})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}, "n2": {one(amd, arm), nil}}, bindings: []string{"n1", "n2"}},
			want:  "no known value",
		},
		{
			name: "architecture affinity, elsewhere",
			input: input(append(pods(1, builders.PodOptions{Labels: map[string]string{"app": "db"}}),
				pods(1, builders.PodOptions{PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelArchStable, map[string]string{"app": "db"})}})...)),
			plan: plan{nodes: map[string]newNode{"n1": {one(arm), nil}, "n2": {one(amd), nil}}, bindings: []string{"n1", "n2"}},
			want: "pod affinity",
		},
		{
			name: "architecture affinity, same architecture",
			input: input(append(pods(1, builders.PodOptions{Labels: map[string]string{"app": "db"}}),
				pods(1, builders.PodOptions{PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelArchStable, map[string]string{"app": "db"})}})...)),
			plan: plan{nodes: map[string]newNode{"n1": {one(arm), nil}, "n2": {one(arm), nil}}, bindings: []string{"n1", "n2"}},
		},
		{
			name:  "anti-affinity on a key no node carries holds",
			input: input(pods(2, builders.PodOptions{Labels: web, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm("example.com/rack", web)}}), existing("old", nil)),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}}, bindings: []string{"old", "n1"}},
		},
		{
			name:  "spread on a key the node does not carry",
			input: input(pods(1, builders.PodOptions{Labels: web, TopologySpread: spread("example.com/rack", nil)}), existing("old", nil)),
			plan:  plan{bindings: []string{"old"}},
			want:  "does not have the label",
		},
		{
			name:  "existing nodes' labels are domains",
			input: input(pods(2, builders.PodOptions{Labels: web, TopologySpread: spread("example.com/rack", nil)}), existing("r1", map[string]string{"example.com/rack": "1"}), existing("r2", map[string]string{"example.com/rack": "2"})),
			plan:  plan{bindings: []string{"r1", "r1"}},
			want:  "skew 2",
		},
		{
			name: "a node without every key of the pod's constraints is no domain",
			input: input(pods(2, builders.PodOptions{Labels: web, TopologySpread: append(spread(corev1.LabelTopologyZone, nil), spread(v1alpha5.CapacityTypeLabelKey, nil)...)}),
				existing("unmanaged", map[string]string{corev1.LabelTopologyZone: "zone-2"})),
			plan: plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{z1, spot}}, "n2": {one(amd), []corev1.NodeSelectorRequirement{z1, onDemand}}}, bindings: []string{"n1", "n2"}},
		},
		{
			name:  "nodeTaintsPolicy Ignore counts a tainted node's zone",
			input: input(pods(2, builders.PodOptions{Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, nil)}), existing("tainted", map[string]string{corev1.LabelTopologyZone: "zone-2"}, taint)),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{z1}}}, bindings: []string{"n1", "n1"}},
			want:  "skew 2",
		},
		{
			name: "nodeTaintsPolicy Honor leaves a tainted node's zone out",
			input: input(pods(2, builders.PodOptions{Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, func(c *corev1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
			})}), existing("tainted", map[string]string{corev1.LabelTopologyZone: "zone-2"}, taint)),
			plan: plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{z1}}}, bindings: []string{"n1", "n1"}},
		},
		{
			name: "nodeAffinityPolicy Ignore counts a zone the pod cannot use",
			input: input(pods(2, builders.PodOptions{Labels: web, NodeRequirements: []corev1.NodeSelectorRequirement{z1}, TopologySpread: spread(corev1.LabelTopologyZone, func(c *corev1.TopologySpreadConstraint) {
				c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
			})}), existing("other", map[string]string{corev1.LabelTopologyZone: "zone-2"})),
			plan: plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{z1}}}, bindings: []string{"n1", "n1"}},
			want: "skew 2",
		},
		{
			name:  "nodeAffinityPolicy Honor leaves it out",
			input: input(pods(2, builders.PodOptions{Labels: web, NodeRequirements: []corev1.NodeSelectorRequirement{z1}, TopologySpread: spread(corev1.LabelTopologyZone, nil)}), existing("other", map[string]string{corev1.LabelTopologyZone: "zone-2"})),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{z1}}}, bindings: []string{"n1", "n1"}},
		},
		{
			name: "minDomains above the domains there are",
			input: input(pods(3, builders.PodOptions{Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, func(c *corev1.TopologySpreadConstraint) {
				c.MinDomains = ptr.To[int32](3)
			})})),
			plan: plan{nodes: map[string]newNode{"n1": {one(amd), []corev1.NodeSelectorRequirement{z1}}, "n2": {one(amd), []corev1.NodeSelectorRequirement{z2}}}, bindings: []string{"n1", "n2", "n1"}},
			want: "skew 2",
		},
		{
			name:  "matchLabelKeys: anti-affinity binds only the same version",
			input: input([]*corev1.Pod{versioned("v1"), versioned("v2")}),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}}, bindings: []string{"n1", "n1"}},
		},
		{
			name:  "matchLabelKeys: the same version together",
			input: input([]*corev1.Pod{versioned("v1"), versioned("v1")}),
			plan:  plan{nodes: map[string]newNode{"n1": {one(amd), nil}}, bindings: []string{"n1", "n1"}},
			want:  "anti-affinity",
		},
		{
			name: "preferences are never violations",
			input: func() scheduling.Input {
				ps := pods(2, builders.PodOptions{Labels: web, TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.ScheduleAnyway, web)}})
				for _, p := range ps {
					p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: builders.AffinityTerm(corev1.LabelHostname, web)}}}}
				}
				return input(ps)
			}(),
			plan: plan{nodes: map[string]newNode{"n1": {one(amd), nil}}, bindings: []string{"n1", "n1"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrors(t, check.Verify(tc.input, tc.plan.results(tc.input)), tc.want)
		})
	}
}

func TestVerifyVolumes(t *testing.T) {
	z1 := []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-1"}}}
	mounting := func(claim string) []*corev1.Pod {
		p := pods(1, builders.PodOptions{})
		p[0].Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		return p
	}
	bound := func(name, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	}
	unbound := func(name, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}}
	}
	volume := func(key, zone string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}},
		}}}}
	}
	class := func(mode storagev1.VolumeBindingMode, zone string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, VolumeBindingMode: &mode, AllowedTopologies: []corev1.TopologySelectorTerm{{
			MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{zone}}},
		}}}
	}
	cases := []struct {
		name string
		in   func(in scheduling.Input) scheduling.Input
		want string
	}{
		{name: "bound volume in the node's zone, by the CSI driver's key", in: func(in scheduling.Input) scheduling.Input {
			in.Pods, in.PersistentVolumeClaims, in.PersistentVolumes = mounting("data"), []*corev1.PersistentVolumeClaim{bound("data", "pv")}, []*corev1.PersistentVolume{volume("topology.ebs.csi.aws.com/zone", "zone-1")}
			return in
		}},
		{name: "bound volume in another zone", want: "node affinity", in: func(in scheduling.Input) scheduling.Input {
			in.Pods, in.PersistentVolumeClaims, in.PersistentVolumes = mounting("data"), []*corev1.PersistentVolumeClaim{bound("data", "pv")}, []*corev1.PersistentVolume{volume(corev1.LabelTopologyZone, "zone-2")}
			return in
		}},
		{name: "bound volume whose zone label excludes the node", want: "zones", in: func(in scheduling.Input) scheduling.Input {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: map[string]string{corev1.LabelTopologyZone: "zone-2__zone-3"}}}
			in.Pods, in.PersistentVolumeClaims, in.PersistentVolumes = mounting("data"), []*corev1.PersistentVolumeClaim{bound("data", "pv")}, []*corev1.PersistentVolume{pv}
			return in
		}},
		{name: "first-consumer claim within the allowed topologies", in: func(in scheduling.Input) scheduling.Input {
			in.Pods, in.PersistentVolumeClaims, in.StorageClasses = mounting("data"), []*corev1.PersistentVolumeClaim{unbound("data", "sc")}, []*storagev1.StorageClass{class(storagev1.VolumeBindingWaitForFirstConsumer, "zone-1")}
			return in
		}},
		{name: "first-consumer claim outside the allowed topologies", want: "allowed topologies", in: func(in scheduling.Input) scheduling.Input {
			in.Pods, in.PersistentVolumeClaims, in.StorageClasses = mounting("data"), []*corev1.PersistentVolumeClaim{unbound("data", "sc")}, []*storagev1.StorageClass{class(storagev1.VolumeBindingWaitForFirstConsumer, "zone-2")}
			return in
		}},
		{name: "unbound claim of an immediate class", want: "not provisioned for its first consumer", in: func(in scheduling.Input) scheduling.Input {
			in.Pods, in.PersistentVolumeClaims, in.StorageClasses = mounting("data"), []*corev1.PersistentVolumeClaim{unbound("data", "sc")}, []*storagev1.StorageClass{class(storagev1.VolumeBindingImmediate, "zone-1")}
			return in
		}},
		{name: "missing claim", want: "not found", in: func(in scheduling.Input) scheduling.Input {
			in.Pods = mounting("data")
			return in
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(input(nil))
			p := plan{nodes: map[string]newNode{"n1": {[]*cloudprovider.InstanceType{amd}, z1}}, bindings: []string{"n1"}}
			wantErrors(t, check.Verify(in, p.results(in)), tc.want)
		})
	}
}

// wantErrors fails unless errs is empty for want "", or one of errs mentions want.
func wantErrors(t *testing.T, errs []error, want string) {
	t.Helper()
	if want == "" {
		for _, err := range errs {
			t.Error(err)
		}
		return
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Errorf("errors %v, want one mentioning %q", errs, want)
}

func TestVerifyAttachLimits(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	limited := *amd
	limited.VolumeLimits = map[string]int64{"ebs.csi.aws.com": 2}
	ebsPods := func(n int, provisioner string) scheduling.Input {
		ps := pods(n, builders.PodOptions{})
		in := input(ps)
		in.Pools[0].InstanceTypes = []*cloudprovider.InstanceType{&limited}
		in.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: provisioner, VolumeBindingMode: &wffc}}
		for _, p := range ps {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.Name}}}}
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("sc")}})
		}
		return in
	}
	onNode := func(name string) *storagev1.CSINode {
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "ebs.csi.aws.com", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)}}}}}
	}
	cases := []struct {
		name string
		in   scheduling.Input
		plan plan
		want string
	}{
		{name: "within the type's limit", in: ebsPods(2, "ebs.csi.aws.com"),
			plan: plan{nodes: map[string]newNode{"n1": {[]*cloudprovider.InstanceType{&limited}, nil}}, bindings: []string{"n1", "n1"}}},
		{name: "over the type's limit", in: ebsPods(3, "ebs.csi.aws.com"), want: "3 volumes of ebs.csi.aws.com",
			plan: plan{nodes: map[string]newNode{"n1": {[]*cloudprovider.InstanceType{&limited}, nil}}, bindings: []string{"n1", "n1", "n1"}}},
		{name: "in-tree EBS counts as the CSI driver's", in: ebsPods(3, "kubernetes.io/aws-ebs"), want: "3 volumes of ebs.csi.aws.com",
			plan: plan{nodes: map[string]newNode{"n1": {[]*cloudprovider.InstanceType{&limited}, nil}}, bindings: []string{"n1", "n1", "n1"}}},
		{name: "another driver has no limit", in: ebsPods(3, "efs.csi.aws.com"),
			plan: plan{nodes: map[string]newNode{"n1": {[]*cloudprovider.InstanceType{&limited}, nil}}, bindings: []string{"n1", "n1", "n1"}}},
		{name: "over an existing node's CSINode count", want: "its CSINode allows 1",
			in: func() scheduling.Input {
				in := ebsPods(2, "ebs.csi.aws.com")
				old := existing("old", nil)
				old.CSINode = onNode("old")
				in.Nodes = []scheduling.Node{old}
				return in
			}(),
			plan: plan{bindings: []string{"old", "old"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrors(t, check.Verify(tc.in, tc.plan.results(tc.in)), tc.want)
		})
	}
}

func TestVerifyMinValues(t *testing.T) {
	both, amdOnly := []*cloudprovider.InstanceType{amd, arm}, []*cloudprovider.InstanceType{amd}
	cases := []struct {
		name    string
		policy  scheduling.MinValuesPolicy
		types   []*cloudprovider.InstanceType
		relaxed bool
		want    string
	}{
		{name: "both archs kept", policy: scheduling.MinValuesStrict, types: both},
		{name: "one arch, unmarked", policy: scheduling.MinValuesBestEffort, types: amdOnly, want: "1 values of kubernetes.io/arch, minValues 2, and not marked relaxed"},
		{name: "one arch, relaxed under BestEffort", policy: scheduling.MinValuesBestEffort, types: amdOnly, relaxed: true},
		{name: "one arch, relaxed under Strict", policy: scheduling.MinValuesStrict, types: amdOnly, relaxed: true, want: "under the Strict policy"},
		{name: "marked relaxed but both kept", policy: scheduling.MinValuesBestEffort, types: both, relaxed: true, want: "marked relaxed, but"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(pods(1, builders.PodOptions{}))
			in.Pools[0].MinValues = map[string]int{corev1.LabelArchStable: 2}
			in.Pools[0].MinValuesPolicy = tc.policy
			r := plan{nodes: map[string]newNode{"n1": {tc.types, nil}}, bindings: []string{"n1"}}.results(in)
			r.NewNodes[0].MinValuesRelaxed = tc.relaxed
			wantErrors(t, check.Verify(in, r), tc.want)
		})
	}
}
