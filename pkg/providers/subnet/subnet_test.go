package subnet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/providers/subnet"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const vpcSeed = `
subnets:
- {id: subnet-a, availabilityZone: us-west-2a, tags: {kubernetes.io/cluster/demo: shared, Name: private-a}}
- {id: subnet-a2, availabilityZone: us-west-2a, availableIpAddressCount: 3, tags: {kubernetes.io/cluster/demo: shared, Name: small-a}}
- {id: subnet-b, availabilityZone: us-west-2b, tags: {kubernetes.io/cluster/demo: shared, Name: private-b}}
- {id: subnet-other, availabilityZone: us-west-2c, tags: {kubernetes.io/cluster/other: shared}}
`

func newProvider(t *testing.T) (*awsemulator.Emulator, *clocktesting.FakeClock, *subnet.Provider) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, vpcSeed)
	return emulator, clk, subnet.NewProvider(awstest.Clients(t, server.URL, clk), clk)
}

func ids(subnets []subnet.Subnet) []string {
	var out []string
	for _, s := range subnets {
		out = append(out, s.ID)
	}
	return out
}

// Terms are ORed, each term's fields ANDed; a subnet two terms select is listed once.
func TestSubnetsAreSelectedByTerms(t *testing.T) {
	_, _, subnets := newProvider(t)
	for _, tc := range []struct {
		name  string
		terms []selector.Term
		want  []string
	}{
		{"the cluster's tag, any value", []selector.Term{{Tags: map[string]string{"kubernetes.io/cluster/demo": selector.AnyValue}}}, []string{"subnet-a", "subnet-a2", "subnet-b"}},
		{"tags ANDed", []selector.Term{{Tags: map[string]string{"kubernetes.io/cluster/demo": "shared", "Name": "private-b"}}}, []string{"subnet-b"}},
		{"by id", []selector.Term{{ID: "subnet-other"}}, []string{"subnet-other"}},
		{"terms ORed, once each", []selector.Term{{ID: "subnet-b"}, {Tags: map[string]string{"Name": "private-b"}}, {ID: "subnet-a"}}, []string{"subnet-a", "subnet-b"}},
		{"none", []selector.Term{{Tags: map[string]string{"Name": "missing"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := subnets.List(context.Background(), tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := subnets.List(context.Background(), []selector.Term{{Name: "private-a"}}); err == nil {
		t.Error("List by name, which subnets do not have, = no error")
	}
}

// A selection is kept for a minute; selecting none is not kept, so that a subnet tagged next is
// seen on the next call.
func TestSubnetSelectionsAreKeptForAMinute(t *testing.T) {
	emulator, clk, subnets := newProvider(t)
	ctx := context.Background()
	demo := []selector.Term{{Tags: map[string]string{"kubernetes.io/cluster/demo": selector.AnyValue}}}
	if _, err := subnets.List(ctx, demo); err != nil {
		t.Fatal(err)
	}
	if _, err := emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	if got, err := subnets.List(ctx, demo); err != nil || len(got) != 3 {
		t.Errorf("List within the minute = %v, %v; want the kept three", ids(got), err)
	}
	clk.Step(time.Minute + time.Second)
	var denied *cloudprovider.AccessDeniedError
	if _, err := subnets.List(ctx, demo); !errors.As(err, &denied) || denied.Action != "ec2:DescribeSubnets" {
		t.Errorf("List after the minute = %v, want access denied naming ec2:DescribeSubnets", err)
	}
	emulator.ClearFaults()

	next := []selector.Term{{Tags: map[string]string{"Name": "next"}}}
	if got, err := subnets.List(ctx, next); err != nil || len(got) != 0 {
		t.Fatalf("List = %v, %v; want none yet", ids(got), err)
	}
	seed, err := awsemulator.ParseSeed([]byte(`subnets: [{id: subnet-next, availabilityZone: us-west-2c, tags: {Name: next}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := emulator.Seed(seed); err != nil {
		t.Fatal(err)
	}
	if got, err := subnets.List(ctx, next); err != nil || len(got) != 1 {
		t.Errorf("List after the subnet was made = %v, %v; want it", ids(got), err)
	}
}

func TestZonalSubnetsHaveTheMostFreeAddresses(t *testing.T) {
	subnets := []subnet.Subnet{
		{ID: "subnet-a", Zone: "z-a", AvailableIPv4s: 250},
		{ID: "subnet-a2", Zone: "z-a", AvailableIPv4s: 3},
		{ID: "subnet-b", Zone: "z-b", AvailableIPv4s: 10},
		{ID: "subnet-b2", Zone: "z-b", AvailableIPv4s: 11},
	}
	want := map[string]subnet.Subnet{"z-a": subnets[0], "z-b": subnets[3]}
	if diff := cmp.Diff(want, subnet.ZonalSubnets(subnets)); diff != "" {
		t.Errorf("ZonalSubnets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"z-a": true, "z-b": true}, subnet.Zones(subnets)); diff != "" {
		t.Errorf("Zones (-want +got):\n%s", diff)
	}
}
