package scheduling_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pods"
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

func workloadProvisioner(types []*cloudprovider.InstanceType) scheduling.Provisioner {
	return scheduling.Provisioner{
		Provisioner:   builders.Provisioner(builders.ProvisionerOptions{Name: "default", Limits: builders.Resources("cpu", "100M", "memory", "100Pi")}),
		InstanceTypes: types,
	}
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

// lowerBound is a true floor for the price of any plan that places pods on types: the optimum
// of the linear program that buys nodes of each type in fractions, each at its cheapest
// offering, so that their allocatable cpu, memory and pods cover the pods' total requests and
// there is at least one node per hostname anti-affinity pod (each needs a node of its own).
// Any plan's nodes are such a purchase in whole numbers, so none costs less. It ignores that
// a pod must fit whole on one node; on a catalogue priced linearly in size, like the
// synthetic one, it is the price per core of the cores the binding resource needs, with every
// node's overhead reserved.
func lowerBound(tb testing.TB, types []*cloudprovider.InstanceType, ps []*corev1.Pod) float64 {
	tb.Helper()
	const gib = 1 << 30
	var cpu, memory, ownNode float64
	for _, pod := range ps {
		r := pods.Requests(pod)
		cpu += r.Cpu().AsApproximateFloat64()
		memory += r.Memory().AsApproximateFloat64() / gib
		if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if term.TopologyKey == corev1.LabelHostname {
					ownNode++
					break
				}
			}
		}
	}
	// Standard form, minimise price·x subject to A·x = b, x ≥ 0: one column per type, rows
	// cpu, memory (GiB), pods and node count, and a surplus column per row that turns "covers"
	// into an equality.
	covered := []float64{cpu, memory, float64(len(ps)), math.Max(1, ownNode)}
	var prices []float64
	var columns [][]float64
	for _, it := range types {
		price := math.Inf(1)
		for _, o := range it.Offerings {
			if o.Available {
				price = math.Min(price, o.Price)
			}
		}
		if math.IsInf(price, 1) {
			continue
		}
		a := it.Allocatable()
		prices = append(prices, price)
		columns = append(columns, []float64{a.Cpu().AsApproximateFloat64(), a.Memory().AsApproximateFloat64() / gib, a.Pods().AsApproximateFloat64(), 1})
	}
	rows := len(covered)
	A := mat.NewDense(rows, len(columns)+rows, nil)
	for j, column := range columns {
		A.SetCol(j, column)
	}
	for i := range rows {
		A.Set(i, len(columns)+i, -1)
		prices = append(prices, 0)
	}
	bound, _, err := lp.Simplex(prices, A, covered, 1e-10, nil)
	if err != nil {
		tb.Fatalf("solving the lower bound's linear program, %v", err)
	}
	return bound
}
