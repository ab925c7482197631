package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
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
				in.Provisioners = []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})}
				return in
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantNodes(t, r, 3)
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-2": 3})
			},
		},
		{
			name: "a volume's zone label may name several zones",
			input: func() scheduling.Input {
				pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: map[string]string{corev1.LabelTopologyZone: "zone-1__zone-3"}}}
				return scheduling.Input{Pods: []*corev1.Pod{withClaim(pod(), "data")}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "pv", nil)},
					PersistentVolumes: []*corev1.PersistentVolume{pv}, Provisioners: []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})}}
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
					StorageClasses: []*storagev1.StorageClass{storageClass("gp3", wffc, "zone-3")}, Provisioners: []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})}}
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
					Provisioners: []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})}}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) {
				wantCounts(t, podsByValue(in, r, corev1.LabelTopologyZone), map[string]int{"zone-1": 1})
			},
		},
		{
			name: "a class without allowed topologies constrains nothing",
			input: func() scheduling.Input {
				return scheduling.Input{Pods: []*corev1.Pod{withClaim(pod(), "data")}, PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "", class("gp3"))},
					StorageClasses: []*storagev1.StorageClass{storageClass("gp3", wffc)}, Provisioners: []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})}}
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
					PersistentVolumes: []*corev1.PersistentVolume{zonalVolume("pv", corev1.LabelTopologyZone, "zone-1")}, Provisioners: []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})}}
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
					Provisioners:           []scheduling.Provisioner{provisioner(builders.ProvisionerOptions{})},
				}
			},
			expect: func(t *testing.T, in scheduling.Input, r *scheduling.Results) { wantUnschedulable(t, r, 5, "") },
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
