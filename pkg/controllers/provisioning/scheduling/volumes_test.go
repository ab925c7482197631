package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// withClaim mounts the named claim in the pod.
func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
	return pod
}

func claim(name, volume string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: class}}
}

// zonalVolume is a volume whose node affinity names zones under key, as CSI drivers write it.
func zonalVolume(name, key string, zones ...string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: zones}},
		}}}},
	}}
}

func storageClass(name string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: zones}}}}
	}
	return sc
}

func TestVolumeTopology(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	class := func(name string) *string { return &name }
	pod := func() *corev1.Pod { return builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi")}) }
	cases := []struct {
		name   string
		input  func() scheduling.Input
		expect func(t *testing.T, in scheduling.Input, r *scheduling.Results)
	}{
		{
			name: "a claim bound to a zonal volume keeps a StatefulSet's pods in the volume's zone",
			input: func() scheduling.Input {
				var in scheduling.Input
				for _, name := range []string{"data-0", "data-1", "data-2"} {
					p := withClaim(builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), Labels: map[string]string{"app": "db"},
						PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "db"})}}), name)
					in.Pods = append(in.Pods, p)
					in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, claim(name, "pv-"+name, nil))
					in.PersistentVolumes = append(in.PersistentVolumes, zonalVolume("pv-"+name, "topology.ebs.csi.aws.com/zone", "zone-2"))
				}
				in.Pools = []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}
				return in
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 3)
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-2": 3})
			},
		},
		{
			// The driver's key is the zone on a node Karpenter launches, where the driver runs;
			// an existing node must carry it, as kube-scheduler's VolumeBinding reads it.
			name: "an existing node must carry the key a volume's node affinity names",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: []*corev1.Pod{withClaim(pod(), "data")}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "pv", nil)},
					PersistentVolumes: []*corev1.PersistentVolume{zonalVolume("pv", "topology.ebs.csi.aws.com/zone", "zone-1")},
					Nodes:             []scheduling.Node{existingNode("no-driver", "zone-1", "4", "8Gi")}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 1)
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 1})
			},
		},
		{
			name: "a volume's zone label may name several zones",
			input: func() scheduling.Input {
				pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: map[string]string{corev1.LabelTopologyZone: "zone-1__zone-3"}}}
				return scheduling.Input{Pods: []*corev1.Pod{withClaim(pod(), "data")}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "pv", nil)},
					PersistentVolumes: []*corev1.PersistentVolume{pv}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantUnschedulable(t, r, 0, "")
				if z := valueOf(in, r, r.Bindings[0].NodeName, corev1.LabelTopologyZone); z == "zone-2" {
					t.Errorf("pod in %s, outside the volume's zones", z)
				}
			},
		},
		{
			name: "an unbound WaitForFirstConsumer claim follows its class's allowed topologies",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: []*corev1.Pod{withClaim(pod(), "data")}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "", class("gp3"))},
					StorageClasses: []*storagev1.StorageClass{storageClass("gp3", wffc, "zone-3")}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-3": 1})
			},
		},
		{
			name: "an ephemeral volume's template names the class before its claim exists",
			input: func() scheduling.Input {
				p := pod()
				p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class("gp3")}},
				}}}}
				return scheduling.Input{Pods: []*corev1.Pod{p}, StorageClasses: []*storagev1.StorageClass{storageClass("gp3", wffc, "zone-1")},
					Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 1})
			},
		},
		{
			name: "a class without allowed topologies constrains nothing",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: []*corev1.Pod{withClaim(pod(), "data")}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "", class("gp3"))},
					StorageClasses: []*storagev1.StorageClass{storageClass("gp3", wffc)}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantUnschedulable(t, r, 0, "") },
		},
		{
			name: "volumes and a zone spread together",
			input: func() scheduling.Input {
				web := map[string]string{"app": "web"}
				ps := builders.Pods(3, builders.PodOptions{Requests: requests("1", "1Gi"), Labels: web, TopologySpread: spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, web, nil)})
				withClaim(ps[0], "data")
				return scheduling.Input{Pods: ps, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "pv", nil)},
					PersistentVolumes: []*corev1.PersistentVolume{zonalVolume("pv", corev1.LabelTopologyZone, "zone-1")}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 1, "zone-2": 1, "zone-3": 1})
			},
		},
		{
			name: "claims kube-scheduler would not place on a new node leave the pod unschedulable",
			input: func() scheduling.Input {
				return scheduling.Input{
					Pods: []*corev1.Pod{withClaim(pod(), "missing"), withClaim(pod(), "immediate"), withClaim(pod(), "lost-volume"), withClaim(pod(), "no-class"),
						withClaim(builders.Pod(builders.PodOptions{Requests: requests("1", "1Gi"), NodeSelector: map[string]string{corev1.LabelTopologyZone: "zone-1"}}), "zonal")},
					PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("immediate", "", class("io2")), claim("lost-volume", "gone", nil), claim("no-class", "", nil), claim("zonal", "pv", nil)},
					PersistentVolumes:      []*corev1.PersistentVolume{zonalVolume("pv", corev1.LabelTopologyZone, "zone-2")},
					StorageClasses:         []*storagev1.StorageClass{storageClass("io2", immediate)},
					Pools:                  []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
				}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantUnschedulable(t, r, 5, "") },
		},
		{
			// kube-scheduler's VolumeRestrictions: a ReadWriteOncePod claim is one pod's.
			name: "a ReadWriteOncePod claim in use keeps other pods from it",
			input: func() scheduling.Input {
				once := func(name string) *corev1.PersistentVolumeClaim {
					c := claim(name, "pv-"+name, nil)
					c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
					return c
				}
				running := withClaim(builders.Pod(builders.PodOptions{Name: "running", NodeName: "node-a", Requests: requests("100m", "100Mi")}), "held")
				return scheduling.Input{
					Pods: []*corev1.Pod{withClaim(pod(), "held"),
						withClaim(builders.Pod(builders.PodOptions{Name: "first", Requests: requests("1", "1Gi")}), "shared"),
						withClaim(builders.Pod(builders.PodOptions{Name: "second", Requests: requests("1", "1Gi")}), "shared")},
					Nodes:                  []scheduling.Node{existingNode("node-a", "zone-1", "4", "8Gi", running)},
					PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{once("held"), once("shared")},
					PersistentVolumes:      []*corev1.PersistentVolume{zonalVolume("pv-held", corev1.LabelTopologyZone, "zone-1"), zonalVolume("pv-shared", corev1.LabelTopologyZone, "zone-1")},
					Pools:                  []scheduling.Pool{provisioner(builders.ProvisionerOptions{})},
				}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				// The running pod holds its claim, the first pending pod the other.
				wantUnschedulable(t, r, 2, "ReadWriteOncePod")
				if len(r.Bindings) != 1 || r.Bindings[0].Pod.Name != "first" {
					t.Errorf("bindings %v, want pod first only", r.Bindings)
				}
			},
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

// ebsPods are n pods, each with its own unbound EBS claim of class gp3.
func ebsPods(n int, claims *[]*corev1.PersistentVolumeClaim) []*corev1.Pod {
	gp3 := "gp3"
	ps := builders.Pods(n, builders.PodOptions{Requests: requests("100m", "100Mi")})
	for _, p := range ps {
		withClaim(p, p.Name+"-data")
		*claims = append(*claims, claim(p.Name+"-data", "", &gp3))
	}
	return ps
}

// volumeLimited is an instance type that attaches ebs EBS volumes.
func volumeLimited(name string, cpu int64, price float64, ebs int64) *cloudprovider.InstanceType {
	it := workloads.InstanceType(name, "amd64", cpu, 2*cpu, 100, price)
	it.VolumeLimits = map[string]int64{cloudprovider.EBSCSIDriver: ebs}
	return it
}

func csiNode(name string, drivers map[string]int32) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for driver, count := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: driver, NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(count)}})
	}
	return n
}

// attachedPerNode counts the volumes mounted by the pods bound to each node.
func attachedPerNode(r *scheduling.Results) map[string]int {
	out := map[string]int{}
	for _, b := range r.Bindings {
		out[b.NodeName] += len(b.Pod.Spec.Volumes)
	}
	return out
}

func TestVolumeAttachLimits(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	gp3 := storageClass("gp3", wffc)
	limited := func(types ...*cloudprovider.InstanceType) []scheduling.Pool {
		p := provisioner(builders.ProvisionerOptions{})
		p.InstanceTypes = types
		return []scheduling.Pool{p}
	}
	cases := []struct {
		name   string
		input  func() scheduling.Input
		expect func(t *testing.T, in scheduling.Input, r *scheduling.Results)
	}{
		{
			name: "a new node gets no more EBS volumes than its instance type attaches",
			input: func() scheduling.Input {
				in := scheduling.Input{StorageClasses: []*storagev1.StorageClass{gp3}, Pools: limited(volumeLimited("small", 8, 0.1, 3))}
				in.Pods = ebsPods(10, &in.PersistentVolumeClaims)
				return in
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 4)
				for node, n := range attachedPerNode(r) {
					if n > 3 {
						t.Errorf("node %s attaches %d volumes, its type 3", node, n)
					}
				}
			},
		},
		{
			name: "a larger attach limit is worth a dearer type only when the pods need it",
			input: func() scheduling.Input {
				in := scheduling.Input{StorageClasses: []*storagev1.StorageClass{gp3},
					Pools: limited(volumeLimited("few-volumes", 8, 0.1, 2), volumeLimited("many-volumes", 8, 0.15, 20))}
				in.Pods = ebsPods(10, &in.PersistentVolumeClaims)
				return in
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 1)
				wantFirstType(t, r.NewNodes[0], "many-volumes")
			},
		},
		{
			name: "an existing node's CSINode count includes its pods' volumes, in-tree EBS among them",
			input: func() scheduling.Input {
				inTree := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "old-pv"}, Spec: corev1.PersistentVolumeSpec{
					PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
				old := existingNode("old", "zone-1", "8", "16Gi", withClaim(builders.Pod(builders.PodOptions{}), "old-data"))
				old.CSINode = csiNode("old", map[string]int32{cloudprovider.EBSCSIDriver: 2})
				in := scheduling.Input{Nodes: []scheduling.Node{old}, StorageClasses: []*storagev1.StorageClass{gp3}, PersistentVolumes: []*corev1.PersistentVolume{inTree},
					PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("old-data", "old-pv", nil)}, Pools: limited(volumeLimited("small", 8, 0.1, 3))}
				in.Pods = ebsPods(1, &in.PersistentVolumeClaims)
				twoVolumes := ebsPods(1, &in.PersistentVolumeClaims)[0]
				twoVolumes.Name += "-two"
				in.Pods = append(in.Pods, withClaim(twoVolumes, in.Pods[0].Name+"-data"))
				twoVolumes.Spec.Volumes[1].Name = "more"
				in.Pods[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "solo"
				in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, claim("solo", "", ptr.To("gp3")))
				return in
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 1)
				for _, b := range r.Bindings {
					if want := map[int]string{1: "old", 2: r.NewNodes[0].Hostname}[len(b.Pod.Spec.Volumes)]; b.NodeName != want {
						t.Errorf("pod with %d volumes on %s, want %s", len(b.Pod.Spec.Volumes), b.NodeName, want)
					}
				}
			},
		},
		{
			name: "inline in-tree EBS volumes count, a driver without a declared limit has none",
			input: func() scheduling.Input {
				efs := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "efs"}, Provisioner: "efs.csi.aws.com", VolumeBindingMode: &wffc}
				in := scheduling.Input{StorageClasses: []*storagev1.StorageClass{efs}, Pools: limited(volumeLimited("small", 8, 0.1, 3))}
				for i, p := range builders.Pods(6, builders.PodOptions{Requests: requests("100m", "100Mi")}) {
					if i < 3 {
						p.Spec.Volumes = []corev1.Volume{{Name: "inline", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: p.Name}}}}
						p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "inline-too", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: p.Name + "-2"}}})
					} else {
						withClaim(p, p.Name+"-data")
						in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, claim(p.Name+"-data", "", ptr.To("efs")))
					}
					in.Pods = append(in.Pods, p)
				}
				return in
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				// Two pods with two inline EBS volumes each exceed 3; the EFS pods go anywhere.
				wantNodes(t, r, 3)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			r := scheduling.Schedule(in)
			for _, err := range check.Verify(in, r) {
				t.Error(err)
			}
			wantUnschedulable(t, r, 0, "")
			tc.expect(t, in, r)
		})
	}
}

// TestCheckerCatchesReadWriteOncePodSharing: a plan giving one ReadWriteOncePod claim to two
// pods is rejected.
func TestCheckerCatchesReadWriteOncePodSharing(t *testing.T) {
	shared := claim("shared", "pv-shared", nil)
	shared.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	first := withClaim(builders.Pod(builders.PodOptions{Name: "first", Requests: requests("1", "1Gi")}), "shared")
	second := withClaim(builders.Pod(builders.PodOptions{Name: "second", Requests: requests("1", "1Gi")}), "shared")
	in := scheduling.Input{Pods: []*corev1.Pod{first}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{shared},
		PersistentVolumes: []*corev1.PersistentVolume{zonalVolume("pv-shared", corev1.LabelTopologyZone, "zone-1")},
		Pools:             []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
	checkerCatches(t, in, "a ReadWriteOncePod claim used by two pods", "ReadWriteOncePod", func(in *scheduling.Input, r *scheduling.Results) {
		in.Pods = append(in.Pods, second)
		r.Bindings = append(r.Bindings, scheduling.Binding{Pod: second, NodeName: r.Bindings[0].NodeName})
		r.NewNodes[0].Pods = append(r.NewNodes[0].Pods, second)
	})
}
