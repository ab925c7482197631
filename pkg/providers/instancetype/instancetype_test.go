package instancetype_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	if _, err := types.List(zones, nil, nil); err == nil {
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
		list, err := types.List(zones, onDemand, nil)
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

// A node class's types report the ephemeral storage its nodes have: the root volume's, or with
// RAID0 the total of the type's NVMe instance-store disks (EC2's GB, 10^9 bytes) on the types
// that have them; the kubelet holds back EKS's 1Gi and the 10% nodefs.available threshold. A
// Provisioner's report none.
func TestEphemeralStorageIsTheRootVolumeOrTheInstanceStore(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, "")
	clients := awstest.Clients(t, server.URL, clk)
	types := instancetype.NewProvider(clients, instancetype.Options{VMMemoryOverhead: instancetype.DefaultVMMemoryOverhead},
		pricing.NewProvider(clients, awstest.Region, false, clk), instancetype.NewUnavailableOfferings(clk, 3*time.Minute))
	if err := types.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	rootVolume := resource.MustParse("100Gi")
	// overhead is the 1Gi kube-reserved and 10% of the storage.
	overhead := func(storage string) string {
		q := resource.MustParse(storage)
		return strconv.FormatInt(1<<30+q.Value()/10, 10)
	}
	for _, tt := range []struct {
		name    string
		storage *instancetype.EphemeralStorage
		// want is each type's ephemeral storage, "" for none.
		want map[string]string
	}{
		{"a Provisioner's: none", nil, map[string]string{"c5d.large": "", "m5d.large": "", "c5.large": ""}},
		{"the root volume", &instancetype.EphemeralStorage{RootVolumeSize: rootVolume},
			map[string]string{"c5d.large": "100Gi", "m5d.large": "100Gi", "c5.large": "100Gi", "h1.2xlarge": "100Gi"}},
		{"RAID0: the NVMe instance store where there is one", &instancetype.EphemeralStorage{RootVolumeSize: rootVolume, InstanceStoreRAID0: true},
			// c5d.24xlarge has four 900 GB disks; h1's hard disks are not NVMe, so not in the array.
			map[string]string{"c5d.large": "50G", "m5d.large": "75G", "c5d.24xlarge": "3600G", "c5.large": "100Gi", "h1.2xlarge": "100Gi"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list, err := types.List(map[string]bool{"us-west-2a": true, "us-west-2b": true, "us-west-2c": true}, nil, tt.storage)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]*cloudprovider.InstanceType{}
			for _, it := range list {
				listed[it.Name] = it
			}
			for name, want := range tt.want {
				it, ok := listed[name]
				if !ok {
					t.Fatalf("%s is not listed", name)
				}
				capacity, hasCapacity := it.Capacity[corev1.ResourceEphemeralStorage]
				reserved, hasOverhead := it.Overhead[corev1.ResourceEphemeralStorage]
				if want == "" {
					if hasCapacity || hasOverhead {
						t.Errorf("%s ephemeral storage %s, overhead %s; want none", name, capacity.String(), reserved.String())
					}
					continue
				}
				if capacity.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s ephemeral storage = %s, want %s", name, capacity.String(), want)
				}
				if reserved.Cmp(resource.MustParse(overhead(want))) != 0 {
					t.Errorf("%s ephemeral storage overhead = %s, want %s", name, reserved.String(), overhead(want))
				}
			}
		})
	}
}
