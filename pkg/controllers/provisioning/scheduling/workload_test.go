package scheduling_test

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// The shared scheduling benchmark workload (shared/bench/scheduling-workload.md).

var (
	workloadZones         = []string{"test-zone-1", "test-zone-2", "test-zone-3"}
	workloadCapacityTypes = []string{v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand}
	workloadCPU           = []string{"100m", "250m", "500m", "1000m", "1500m"}
	workloadMemory        = []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	workloadLabelValues   = []string{"a", "b", "c", "d", "e", "f", "g"}
)

func workloadInstanceTypes() []*cloudprovider.InstanceType {
	var types []*cloudprovider.InstanceType
	for i := 0; i < 400; i++ {
		cpu := int64(i + 1)
		memory := 2 * cpu * 1024 * 1024 * 1024
		price := 0.1*float64(cpu) + 0.1*float64(memory)/1e9
		it := &cloudprovider.InstanceType{
			Name:   fmt.Sprintf("fake-it-%d", i),
			Labels: map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*cpu, resource.DecimalSI),
			},
			Overhead: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			},
		}
		for _, ct := range workloadCapacityTypes {
			for _, z := range workloadZones {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: ct, Price: price, Available: true})
			}
		}
		types = append(types, it)
	}
	return types
}

func workloadProvisioner(types []*cloudprovider.InstanceType) scheduling.Pool {
	return scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "default", Limits: builders.Resources("cpu", "100M", "memory", "100Pi")}), types)
}

// workloadPods builds n pods in five equal groups, the remainder generic.
func workloadPods(n int) []*corev1.Pod {
	rng := rand.New(rand.NewSource(42))
	pick := func(values []string) string { return values[rng.Intn(len(values))] }
	group := n / 5
	counts := []int{group + n - 5*group, group, group, group, group}
	var pods []*corev1.Pod
	for kind, count := range counts {
		for i := 0; i < count; i++ {
			cpu, memory := pick(workloadCPU), pick(workloadMemory)
			options := builders.PodOptions{Name: fmt.Sprintf("pod-%d-%d", kind, i), Requests: builders.Resources("cpu", cpu, "memory", memory)}
			switch kind {
			case 0:
				options.Labels = map[string]string{"my-label": pick(workloadLabelValues)}
			case 1, 2:
				options.Labels = map[string]string{"my-label": pick(workloadLabelValues)}
				key := corev1.LabelTopologyZone
				if kind == 2 {
					key = corev1.LabelHostname
				}
				options.TopologySpread = []corev1.TopologySpreadConstraint{
					builders.Spread(key, corev1.DoNotSchedule, map[string]string{"my-label": pick(workloadLabelValues)}),
				}
			case 3:
				value := pick(workloadLabelValues)
				options.Labels = map[string]string{"my-affinity": value}
				options.PodAffinity = []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, map[string]string{"my-affinity": value})}
			case 4:
				options.Labels = map[string]string{"app": "nginx"}
				options.PodAntiAffinity = []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "nginx"})}
			}
			pods = append(pods, builders.Pod(options))
		}
	}
	return pods
}

// droppedTerms is -drop-terms: the workload's topology terms the scheduling benchmarks take off
// its pods. The pattern bound ignores spreads and pod affinity (it keeps hostname
// anti-affinity), so a plan of the workload without them is held to the bound on the problem the
// bound describes, and each one dropped alone shows what it costs (docs/benchmarks.md).
var droppedTerms = flag.String("drop-terms", "", "BenchmarkScheduling and BenchmarkSchedulingRealCatalogue: the workload's terms to take off its pods, comma-separated: "+strings.Join(workloadTerms, ", "))

// workloadTerms are the terms -drop-terms may name, in the workload's order of its groups.
var workloadTerms = []string{"zone-spread", "hostname-spread", "zone-affinity"}

// dropTerms takes the terms -drop-terms names off the pods; it fails on a name it does not know.
func dropTerms(tb testing.TB, pods []*corev1.Pod) {
	tb.Helper()
	if *droppedTerms == "" {
		return
	}
	drop := strings.Split(*droppedTerms, ",")
	for _, term := range drop {
		if !slices.Contains(workloadTerms, term) {
			tb.Fatalf("-drop-terms: %q is none of %s", term, strings.Join(workloadTerms, ", "))
		}
	}
	withoutTerms(pods, drop)
}

// withoutTerms takes the workload's terms named (workloadTerms) off its pods.
func withoutTerms(pods []*corev1.Pod, terms []string) {
	for _, p := range pods {
		p.Spec.TopologySpreadConstraints = slices.DeleteFunc(p.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return (c.TopologyKey == corev1.LabelTopologyZone && slices.Contains(terms, "zone-spread")) ||
				(c.TopologyKey == corev1.LabelHostname && slices.Contains(terms, "hostname-spread"))
		})
		if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil && slices.Contains(terms, "zone-affinity") {
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = slices.DeleteFunc(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, func(t corev1.PodAffinityTerm) bool {
				return t.TopologyKey == corev1.LabelTopologyZone
			})
		}
	}
}
