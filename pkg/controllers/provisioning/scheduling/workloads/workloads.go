// Package workloads builds the scheduler's test inputs that more than one test suite replays:
// the fixture instance types and the seeded random workloads that mix every constraint kind,
// which the scheduler's own tests verify with scheduling/check and the kube-scheduler oracle
// module (test/oracle) verifies with kube-scheduler's filter plugins.
package workloads

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// Zones are those the fixture instance types are offered in.
var Zones = []string{"zone-1", "zone-2", "zone-3"}

// InstanceType is a fixture instance type offered in every zone, on demand at price and as
// spot at 40% of it, with 100m cpu and 100Mi memory of overhead.
func InstanceType(name, arch string, cpu, memoryGi, pods int64, price float64) *cloudprovider.InstanceType {
	it := &cloudprovider.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelArchStable: arch, corev1.LabelOSStable: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memoryGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
	}
	for _, z := range Zones {
		it.Offerings = append(it.Offerings,
			cloudprovider.Offering{Zone: z, CapacityType: v1alpha5.CapacityTypeSpot, Price: price * 0.4, Available: true},
			cloudprovider.Offering{Zone: z, CapacityType: v1alpha5.CapacityTypeOnDemand, Price: price, Available: true})
	}
	return it
}

// InstanceTypes are a few fixture types, priced so that bigger costs more, with an arm64 one
// and one that runs only two pods.
func InstanceTypes() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{
		InstanceType("small", "amd64", 2, 4, 10, 0.1),
		InstanceType("medium", "amd64", 4, 8, 20, 0.2),
		InstanceType("large", "amd64", 8, 16, 40, 0.4),
		InstanceType("arm-medium", "arm64", 4, 8, 20, 0.15),
		InstanceType("tiny-pods", "amd64", 16, 32, 2, 0.5),
	}
}

// Mixed is a seeded random workload of 60 pods that mixes every constraint kind the scheduler
// knows — spreads (with minDomains, node policies, matchLabelKeys), required and preferred pod
// (anti-)affinity, node affinity, tolerations, zonal and first-consumer EBS volumes under
// attach limits — over every kind of topology key, with two Provisioners (one tainted) and two
// existing nodes.
func Mixed(seed int64) scheduling.Input {
	rng := rand.New(rand.NewSource(seed)) //nolint:gosec // a reproducible test workload, not a secret
	keys := []string{corev1.LabelTopologyZone, corev1.LabelHostname, v1alpha5.CapacityTypeLabelKey, corev1.LabelInstanceTypeStable, corev1.LabelArchStable, "example.com/team"}
	apps := []string{"a", "b", "c", "d"}
	pick := func(values []string) string { return values[rng.Intn(len(values))] }
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	provisioner := func(o builders.ProvisionerOptions) scheduling.Pool {
		types := InstanceTypes()
		// Few EBS attachments per node, so that the limits bind.
		for i, it := range types {
			it.VolumeLimits = map[string]int64{cloudprovider.EBSCSIDriver: int64(1 + i%3)}
		}
		return scheduling.FromProvisioner(builders.Provisioner(o), types)
	}
	existing := func(name string, labels map[string]string, cpu string, pods ...*corev1.Pod) scheduling.Node {
		l := map[string]string{corev1.LabelHostname: name}
		for k, v := range labels {
			l[k] = v
		}
		return scheduling.Node{Node: builders.Node(builders.NodeOptions{Name: name, Labels: l, Allocatable: builders.Resources("cpu", cpu, "memory", "8Gi", "pods", "110")}), Pods: pods}
	}
	in := scheduling.Input{
		Pools: []scheduling.Pool{
			provisioner(builders.ProvisionerOptions{Name: "team-x", Labels: map[string]string{"example.com/team": "x"}}),
			provisioner(builders.ProvisionerOptions{Name: "team-y", Labels: map[string]string{"example.com/team": "y"},
				Taints: []corev1.Taint{{Key: "dedicated", Value: "y", Effect: corev1.TaintEffectNoSchedule}}}),
		},
		Nodes: []scheduling.Node{
			existing("old-1", map[string]string{corev1.LabelTopologyZone: "zone-1", v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand, "example.com/team": "x"}, "4",
				builders.Pod(builders.PodOptions{Name: "old-1-agent", NodeName: "old-1",
					Containers: []corev1.Container{{Name: "agent", Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}, Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "100m")}}}})),
			existing("old-2", map[string]string{corev1.LabelTopologyZone: "zone-2"}, "2"),
		},
		StorageClasses: []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: cloudprovider.EBSCSIDriver, VolumeBindingMode: &wffc,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"zone-1", "zone-3"}}}}}}},
	}
	// DaemonSets: a node agent on the host's network on every node (port 9100), an agent for
	// arm64 nodes only that binds the port 8080 some pods want, and a cache on the large types
	// only: the last two take their room, and port, from those types alone.
	agent := builders.Pod(builders.PodOptions{Name: "node-agent", Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "agent", Ports: []corev1.ContainerPort{{ContainerPort: 9100}}, Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "50m", "memory", "64Mi")}}}})
	agent.Spec.HostNetwork = true
	in.DaemonSetPods = []*corev1.Pod{
		agent,
		builders.Pod(builders.PodOptions{Name: "arm-agent", NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"},
			Containers: []corev1.Container{{Name: "agent", Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}, Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "1", "memory", "256Mi")}}}}),
		builders.Pod(builders.PodOptions{Name: "large-cache", Requests: builders.Resources("cpu", "2", "memory", "1Gi"), Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelInstanceTypeStable, "large", "tiny-pods")}}),
	}
	in.Nodes[0].CSINode = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "old-1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: cloudprovider.EBSCSIDriver, NodeID: "old-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)}}}}}
	for i := 0; i < 60; i++ {
		app := pick(apps)
		selector := map[string]string{"app": pick(apps)}
		o := builders.PodOptions{Name: fmt.Sprintf("pod-%d", i), Requests: builders.Resources("cpu", pick([]string{"100m", "250m", "500m", "1"}), "memory", pick([]string{"128Mi", "512Mi", "1Gi"})),
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
				c := builders.Spread(key, when, selector)
				c.MaxSkew = 1 + rng.Int31n(2)
				if when == corev1.DoNotSchedule && rng.Intn(4) == 0 {
					c.MinDomains = ptr.To(2 + rng.Int31n(3))
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
				o.TopologySpread = append(o.TopologySpread, c)
			case 2:
				o.PodAffinity = append(o.PodAffinity, builders.AffinityTerm(key, selector))
			case 3:
				o.PodAntiAffinity = append(o.PodAntiAffinity, builders.AffinityTerm(key, selector))
			case 4:
				preferred = append(preferred, corev1.WeightedPodAffinityTerm{Weight: 10, PodAffinityTerm: builders.AffinityTerm(key, selector)})
			case 5:
				preferredAnti = append(preferredAnti, corev1.WeightedPodAffinityTerm{Weight: 10, PodAffinityTerm: builders.AffinityTerm(key, selector)})
			case 6:
				o.NodeRequirements = append(o.NodeRequirements, builders.In(corev1.LabelTopologyZone, pick(Zones), pick(Zones)))
			}
		}
		pod := builders.Pod(o)
		if preferred != nil || preferredAnti != nil {
			if pod.Spec.Affinity == nil {
				pod.Spec.Affinity = &corev1.Affinity{}
			}
			if preferred != nil {
				pod.Spec.Affinity.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}
			}
			if preferredAnti != nil {
				pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferredAnti}
			}
		}
		var claim string
		switch rng.Intn(6) {
		case 0:
			claim = fmt.Sprintf("bound-%d", i)
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: pod.Namespace},
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + claim}})
			in.PersistentVolumes = append(in.PersistentVolumes, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim}, Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: cloudprovider.EBSCSIDriver, VolumeHandle: "vol-" + claim}},
				ClaimRef:               &corev1.ObjectReference{Namespace: pod.Namespace, Name: claim},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					builders.In("topology.ebs.csi.aws.com/zone", pick(Zones))}}}}},
			}})
		case 1:
			claim = fmt.Sprintf("wffc-%d", i)
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: pod.Namespace},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3")}})
		}
		if claim != "" {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		}
		// Host ports by position, not by the seed's stream, which the other terms keep: one pod
		// in seven binds 8080 on every address (as the existing node's pod does), one in
		// eleven 53/UDP on one address.
		switch {
		case i%7 == 3:
			pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		case i%11 == 5:
			pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 53, HostPort: 53, HostIP: "10.0.0.1", Protocol: corev1.ProtocolUDP}}
		}
		in.Pods = append(in.Pods, pod)
	}
	return in
}

// CapacitySpread is upstream's capacity-spread pattern: a spot NodePool choosing its nodes'
// capacity-spread label among 2 – 5 and an on-demand one choosing 1, and pods of two
// Deployments — one spread over the label with a skew of one, one not — of the given sizes.
func CapacitySpread(pods int) scheduling.Input {
	pool := func(name, capacityType string, values ...string) scheduling.Pool {
		np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
			{Key: CapacitySpreadKey, Operator: corev1.NodeSelectorOpIn, Values: values},
		}
		return scheduling.FromNodePool(np, InstanceTypes())
	}
	spread := map[string]string{"app": "spread"}
	in := scheduling.Input{Pools: []scheduling.Pool{pool("spot", v1alpha5.CapacityTypeSpot, "2", "3", "4", "5"), pool("on-demand", v1alpha5.CapacityTypeOnDemand, "1")}}
	in.Pods = append(builders.Pods(pods, builders.PodOptions{Name: "spread", Labels: spread, Requests: builders.Resources("cpu", "1500m", "memory", "2Gi"),
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(CapacitySpreadKey, corev1.DoNotSchedule, spread)}}),
		builders.Pods(pods, builders.PodOptions{Name: "plain", Labels: map[string]string{"app": "plain"}, Requests: builders.Resources("cpu", "3", "memory", "4Gi")})...)
	return in
}

// CapacitySpreadKey is the label CapacitySpread's NodePools choose.
const CapacitySpreadKey = "capacity-spread"
