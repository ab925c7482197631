package disruption

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// listingCloud lists its instances, counting the listings; the rest of the provider is not used.
type listingCloud struct {
	cloudprovider.InstanceProvider
	instances []*cloudprovider.Instance
	err       error
	lists     int
}

func (l *listingCloud) List(context.Context) ([]*cloudprovider.Instance, error) {
	l.lists++
	return l.instances, l.err
}

// TestInstanceNetworksListOncePerRecheck: the cluster's instances are listed once for every
// NodeClaim asked about within driftRecheck, again sooner only for an instance the last listing
// did not show, at most once per relistAfter; a failed listing keeps what was known.
func TestInstanceNetworksListOncePerRecheck(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	cloud := &listingCloud{instances: []*cloudprovider.Instance{{ProviderID: "a", SubnetID: "subnet-a"}}}
	n := &instanceNetworks{instances: cloud, clock: clock}
	for _, step := range []struct {
		name       string
		after      time.Duration
		providerID string
		err        error
		wantSubnet string
		wantLists  int
	}{
		{name: "the first asks", providerID: "a", wantSubnet: "subnet-a", wantLists: 1},
		{name: "known, within the recheck", after: time.Minute, providerID: "a", wantSubnet: "subnet-a", wantLists: 1},
		{name: "an instance not listed: listed again", providerID: "b", wantLists: 2},
		{name: "still not listed, within relistAfter", after: relistAfter / 2, providerID: "b", wantLists: 2},
		{name: "the recheck passed", after: driftRecheck, providerID: "a", wantSubnet: "subnet-a", wantLists: 3},
		{name: "a failed listing keeps what was known", after: driftRecheck, providerID: "a", err: errors.New("throttled"), wantSubnet: "subnet-a", wantLists: 4},
	} {
		clock.Step(step.after)
		cloud.err = step.err
		got := n.of(t.Context(), step.providerID)
		subnet := ""
		if got != nil {
			subnet = got.SubnetID
		}
		if subnet != step.wantSubnet || cloud.lists != step.wantLists {
			t.Errorf("%s: subnet %q after %d listings, want %q after %d", step.name, subnet, cloud.lists, step.wantSubnet, step.wantLists)
		}
	}
	if (&instanceNetworks{clock: clock}).of(t.Context(), "a") != nil {
		t.Error("without an instance provider the network is known")
	}
}
