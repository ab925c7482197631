package instancetype_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/instancetype"
	"karpenter.sh/karpenter/pkg/providers/pricing"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// Offerings are the type's zones among those asked, each capacity type with a price, meeting
// the requirements; one marked unavailable is listed as not Available until its TTL passes.
func TestOfferingsAreTheZonesAskedPricedAndAvailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, "")
	clients := awstest.Clients(t, server.URL, clk)
	unavailable := instancetype.NewUnavailableOfferings(clk, 3*time.Minute)
	types := instancetype.NewProvider(clients, instancetype.Options{VMMemoryOverhead: instancetype.DefaultVMMemoryOverhead},
		pricing.NewProvider(clients, awstest.Region, false, clk), unavailable)
	zones := map[string]bool{"us-west-2a": true, "us-west-2b": true}
	if _, err := types.List(zones, nil); err == nil {
		t.Fatal("List before the catalogue was read = no error")
	}
	if err := types.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	onDemand := []corev1.NodeSelectorRequirement{{Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeOnDemand}}}
	marked := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: v1alpha5.CapacityTypeOnDemand}
	unavailable.Mark(marked, "InsufficientInstanceCapacity")
	available := func() map[string]bool {
		t.Helper()
		list, err := types.List(zones, onDemand)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list {
			if it.Name != "m5.large" {
				continue
			}
			out := map[string]bool{}
			for _, o := range it.Offerings {
				if !zones[o.Zone] || o.CapacityType != v1alpha5.CapacityTypeOnDemand || o.Price <= 0 {
					t.Errorf("offering %+v is not an on-demand one in the zones asked, priced", o)
				}
				out[o.Zone] = o.Available
			}
			return out
		}
		t.Fatal("m5.large is not listed")
		return nil
	}
	if got := available(); len(got) != 2 || got["us-west-2a"] || !got["us-west-2b"] {
		t.Errorf("m5.large's on-demand offerings available = %v, want us-west-2a marked unavailable and us-west-2b available", got)
	}
	clk.Step(3*time.Minute + time.Second)
	if got := available(); !got["us-west-2a"] {
		t.Errorf("m5.large's on-demand offerings available = %v after the TTL, want us-west-2a offered again", got)
	}
}
