package aws_test

import (
	"context"
	"fmt"
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
)

// TestNoStalePricesBeforeTheFirstPriceRead: while Start's first read of the prices is under
// way, the prices are not reported stale (nothing failed: a fresh sandbox must not warn that
// reading them failed), and no instance type is offered at prices not read yet.
func TestNoStalePricesBeforeTheFirstPriceRead(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	fault, err := e.emulator.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultHang})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.instances.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Start = %v", err)
		}
	}()
	eventually.Holds(t, "the first price read is under way", func() (bool, string, error) {
		hits := e.emulator.FaultHits(fault)
		return hits > 0, fmt.Sprint(hits), nil
	})
	if err := e.instances.StalePrices(); err != nil {
		t.Errorf("StalePrices = %v before the first read ended", err)
	}
	if types, err := e.instances.InstanceTypes(ctx, cloudprovider.Constraints{Provider: provider("")}); err == nil {
		t.Errorf("InstanceTypes offered %d types before the first price read ended", len(types))
	}
}
