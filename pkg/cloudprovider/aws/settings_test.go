package aws_test

import (
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/test/awsemulator"
)

// TestIsolatedVPCNeverCallsThePricingAPI: with upstream's ISOLATED_VPC the Pricing API, which
// has no VPC endpoint, is not called (a denied call would make the prices stale); the pricing
// provider's own test checks that on-demand prices are the built-in ones.
func TestIsolatedVPCNeverCallsThePricingAPI(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	e.instances = newInstances(t, e.server.URL, e.clock, 0, func(o *aws.InstancesOptions) { o.IsolatedVPC = true })
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	e.refresh(t)
	if err := e.instances.StalePrices(); err != nil {
		t.Errorf("StalePrices = %v: the Pricing API was called in an isolated VPC", err)
	}
}

// TestNodeShapeFollowsTheOverheadAndReservedENIs: upstream's VM_MEMORY_OVERHEAD_PERCENT and
// RESERVED_ENIS change the memory and the pods an m5.large (3 ENIs of 10 addresses, 8 GiB)
// offers: with one ENI reserved it holds 2×9+2 = 20 pods, not 29, and its kube-reserved memory
// is 11 MiB per pod less for each.
func TestNodeShapeFollowsTheOverheadAndReservedENIs(t *testing.T) {
	for _, c := range []struct {
		name                  string
		overhead              float64
		reservedENIs          int
		pods, memoryMiB, kube int64
	}{
		{name: "defaults", pods: 29, memoryMiB: 7577, kube: 574 + 100},
		{name: "10% overhead", overhead: 0.1, pods: 29, memoryMiB: 7372, kube: 574 + 100},
		{name: "one reserved ENI", reservedENIs: 1, pods: 20, memoryMiB: 7577, kube: 475 + 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newInstancesEnv(t, vpcSeed, 0)
			e.instances = newInstances(t, e.server.URL, e.clock, 0, func(o *aws.InstancesOptions) {
				o.VMMemoryOverhead, o.ReservedENIs = c.overhead, c.reservedENIs
			})
			e.refresh(t)
			m5 := e.instanceTypes(t, "")["m5.large"]
			if pods := m5.Capacity.Pods().Value(); pods != c.pods {
				t.Errorf("pods %d, want %d", pods, c.pods)
			}
			if memory := m5.Capacity.Memory().Value() >> 20; memory != c.memoryMiB {
				t.Errorf("memory %dMi, want %dMi", memory, c.memoryMiB)
			}
			if kube := m5.Overhead.Memory().Value() >> 20; kube != c.kube {
				t.Errorf("reserved memory %dMi, want %dMi", kube, c.kube)
			}
		})
	}
}
