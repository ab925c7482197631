package fake

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Zones are those of the default catalogue.
var Zones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

// spotDiscount is the spot price as a fraction of on-demand, per zone: spot is cheapest in
// the first zone, so that cheapest-first orders are predictable.
var spotDiscount = map[string]float64{"us-west-2a": 0.31, "us-west-2b": 0.35, "us-west-2c": 0.38}

// DefaultInstanceTypes is a small catalogue shaped after EC2's (us-west-2 on-demand prices,
// ENI pod limits, EKS-style reserved resources): general purpose, compute and memory
// optimised, burstable and arm64 shapes, each on demand and spot in every zone except
// t3.medium, which is offered in two. Each call returns a fresh copy.
func DefaultInstanceTypes() []*cloudprovider.InstanceType {
	shapes := []struct {
		name     string
		arch     string
		cpu      int64
		memoryGi int64
		pods     int64
		price    float64
		// ebsVolumes are EC2's 28 Nitro attachment slots less the root volume and the
		// type's network interfaces.
		ebsVolumes int64
		zones      []string
	}{
		{"c5.large", "amd64", 2, 4, 29, 0.085, 24, Zones},
		{"c5.xlarge", "amd64", 4, 8, 58, 0.17, 23, Zones},
		{"m5.large", "amd64", 2, 8, 29, 0.096, 24, Zones},
		{"m5.xlarge", "amd64", 4, 16, 58, 0.192, 23, Zones},
		{"m5.2xlarge", "amd64", 8, 32, 58, 0.384, 23, Zones},
		{"m6g.large", "arm64", 2, 8, 29, 0.077, 24, Zones},
		{"r5.large", "amd64", 2, 16, 29, 0.126, 24, Zones},
		{"t3.medium", "amd64", 2, 4, 17, 0.0416, 24, Zones[:2]},
	}
	types := make([]*cloudprovider.InstanceType, 0, len(shapes))
	for _, s := range shapes {
		t := &cloudprovider.InstanceType{
			Name:   s.name,
			Labels: map[string]string{corev1.LabelArchStable: s.arch, corev1.LabelOSStable: "linux"},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(s.cpu, resource.DecimalSI),
				corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", s.memoryGi)),
				corev1.ResourcePods:   *resource.NewQuantity(s.pods, resource.DecimalSI),
			},
			Overhead: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(reservedMilliCPU(s.cpu), resource.DecimalSI),
				// The kubelet's reservation (11Mi a pod + 255Mi) and the 100Mi eviction threshold.
				corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", 11*s.pods+255+100)),
			},
			VolumeLimits: map[string]int64{cloudprovider.EBSCSIDriver: s.ebsVolumes},
		}
		for _, zone := range s.zones {
			t.Offerings = append(t.Offerings,
				cloudprovider.Offering{Zone: zone, CapacityType: v1alpha5.CapacityTypeOnDemand, Price: s.price, Available: true},
				cloudprovider.Offering{Zone: zone, CapacityType: v1alpha5.CapacityTypeSpot, Price: s.price * spotDiscount[zone], Available: true},
			)
		}
		types = append(types, t)
	}
	return types
}

// reservedMilliCPU is the CPU EKS reserves for the kubelet: 6% of the first core, 1% of the
// second, 0.5% of the third and fourth, 0.25% of the others.
func reservedMilliCPU(cores int64) int64 {
	reserved := int64(60)
	if cores > 1 {
		reserved += 10
	}
	reserved += 5 * min(max(cores-2, 0), 2)
	reserved += 25 * max(cores-4, 0) / 10
	return reserved
}
