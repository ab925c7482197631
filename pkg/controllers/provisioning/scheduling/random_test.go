package scheduling_test

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestMixedConstraints schedules seeded random workloads that mix every constraint kind the
// scheduler knows, over every kind of topology key, and has the checker verify each plan.
func TestMixedConstraints(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := mixedInput(rand.New(rand.NewSource(seed)))
			r := scheduling.Schedule(in)
			for i, err := range check.Verify(in, r) {
				if i == 10 {
					t.Error("...")
					break
				}
				t.Error(err)
			}
			if len(r.Bindings) == 0 {
				t.Error("no pod placed")
			}
		})
	}
}

func mixedInput(rng *rand.Rand) scheduling.Input {
	keys := []string{corev1.LabelTopologyZone, corev1.LabelHostname, v1alpha5.CapacityTypeLabelKey, corev1.LabelInstanceTypeStable, corev1.LabelArchStable, "example.com/team"}
	apps := []string{"a", "b", "c", "d"}
	pick := func(values []string) string { return values[rng.Intn(len(values))] }
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	in := scheduling.Input{
		Provisioners: []scheduling.Provisioner{
			provisioner(builders.ProvisionerOptions{Name: "team-x", Labels: map[string]string{"example.com/team": "x"}}),
			provisioner(builders.ProvisionerOptions{Name: "team-y", Labels: map[string]string{"example.com/team": "y"},
				Taints: []corev1.Taint{{Key: "dedicated", Value: "y", Effect: corev1.TaintEffectNoSchedule}}}),
		},
		Nodes: []scheduling.Node{
			labelledNode("old-1", map[string]string{corev1.LabelTopologyZone: "zone-1", v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand, "example.com/team": "x"}, "4"),
			labelledNode("old-2", map[string]string{corev1.LabelTopologyZone: "zone-2"}, "2"),
		},
		StorageClasses: []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: cloudprovider.EBSCSIDriver, VolumeBindingMode: &wffc,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"zone-1", "zone-3"}}}}}}},
	}
	// Few EBS attachments per node, so that the limits bind.
	for _, p := range in.Provisioners {
		for i, it := range p.InstanceTypes {
			it.VolumeLimits = map[string]int64{cloudprovider.EBSCSIDriver: int64(1 + i%3)}
		}
	}
	in.Nodes[0].CSINode = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "old-1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: cloudprovider.EBSCSIDriver, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)}}}}}
	for i := 0; i < 60; i++ {
		app := pick(apps)
		selector := map[string]string{"app": pick(apps)}
		o := builders.PodOptions{Name: fmt.Sprintf("pod-%d", i), Requests: requests(pick([]string{"100m", "250m", "500m", "1"}), pick([]string{"128Mi", "512Mi", "1Gi"})),
			Labels: map[string]string{"app": app, "version": pick([]string{"v1", "v2"})}}
		if rng.Intn(3) == 0 {
			o.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}
		var preferred, preferredAnti []corev1.WeightedPodAffinityTerm
		for c := rng.Intn(3); c > 0; c-- {
			key := pick(keys)
			switch rng.Intn(7) {
			case 0, 1:
				when := corev1.DoNotSchedule
				if rng.Intn(3) == 0 {
					when = corev1.ScheduleAnyway
				}
				o.TopologySpread = append(o.TopologySpread, spread(key, when, selector, func(c *corev1.TopologySpreadConstraint) {
					c.MaxSkew = int32(1 + rng.Intn(2))
					if when == corev1.DoNotSchedule && rng.Intn(4) == 0 {
						c.MinDomains = ptr.To(int32(2 + rng.Intn(3)))
					}
					if rng.Intn(4) == 0 {
						c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
					}
					if rng.Intn(4) == 0 {
						c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
					}
					if rng.Intn(4) == 0 {
						c.MatchLabelKeys = []string{"version"}
					}
				})...)
			case 2:
				o.PodAffinity = append(o.PodAffinity, builders.AffinityTerm(key, selector))
			case 3:
				o.PodAntiAffinity = append(o.PodAntiAffinity, builders.AffinityTerm(key, selector))
			case 4:
				preferred = append(preferred, weighted(builders.AffinityTerm(key, selector))...)
			case 5:
				preferredAnti = append(preferredAnti, weighted(builders.AffinityTerm(key, selector))...)
			case 6:
				o.NodeRequirements = append(o.NodeRequirements, builders.In(corev1.LabelTopologyZone, pick([]string{"zone-1", "zone-2", "zone-3"}), pick([]string{"zone-1", "zone-2", "zone-3"})))
			}
		}
		pod := preferring(1, o, preferred, preferredAnti)[0]
		switch rng.Intn(6) {
		case 0:
			name := fmt.Sprintf("bound-%d", i)
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, claim(name, "pv-"+name, nil))
			pv := zonalVolume("pv-"+name, "topology.ebs.csi.aws.com/zone", pick([]string{"zone-1", "zone-2", "zone-3"}))
			pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: cloudprovider.EBSCSIDriver, VolumeHandle: "vol-" + name}
			in.PersistentVolumes = append(in.PersistentVolumes, pv)
			withClaim(pod, name)
		case 1:
			name := fmt.Sprintf("wffc-%d", i)
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, claim(name, "", ptr.To("gp3")))
			withClaim(pod, name)
		}
		in.Pods = append(in.Pods, pod)
	}
	return in
}
