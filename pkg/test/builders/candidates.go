package builders

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Candidates are the launch candidates of a catalogue of the given number of instance types
// (2 – 65 cores, 4 – 259 GiB, 110 pods), on demand in each zone, as a pod that fits them all has
// on a real catalogue: for benchmarks of what a launch does per candidate.
func Candidates(types int, zones ...string) []cloudprovider.Candidate {
	var out []cloudprovider.Candidate
	for i := range types {
		it := &cloudprovider.InstanceType{Name: fmt.Sprintf("type-%d", i), Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(int64(2+i%64), resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(int64(4+i%256)<<30, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(110, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(20<<30, resource.BinarySI),
		}}
		for _, zone := range zones {
			out = append(out, cloudprovider.Candidate{InstanceType: it, Offering: cloudprovider.Offering{Zone: zone, CapacityType: "on-demand"}})
		}
	}
	return out
}
