package instancetype_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/providers/instancetype"
	"karpenter.sh/karpenter/pkg/providers/pricing"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// BenchmarkList is one listing of the emulator's catalogue in three zones, with no requirement:
// what every provisioning pass asks for each Provisioner.
func BenchmarkList(b *testing.B) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, server := awstest.Serve(b, awsemulator.Options{Clock: clk}, "")
	clients := awstest.Clients(b, server.URL, clk)
	types := instancetype.NewProvider(clients, instancetype.Options{VMMemoryOverhead: instancetype.DefaultVMMemoryOverhead},
		pricing.NewProvider(clients, awstest.Region, false, clk), instancetype.NewUnavailableOfferings(clk, 3*time.Minute))
	if err := types.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	zones := map[string]bool{"us-west-2a": true, "us-west-2b": true, "us-west-2c": true}
	// Not an empty loop: the fallback prices offer the catalogue.
	if listed, err := types.List(zones, nil, nil); err != nil || len(listed) == 0 {
		b.Fatalf("listed %d types, %v", len(listed), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := types.List(zones, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
