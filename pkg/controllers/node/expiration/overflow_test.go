package expiration_test

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestATTLTooLongForADurationNeverExpiresANode is finding 4 of issue 34: a
// ttlSecondsUntilExpired stored before the CRD bounded it (10000000000 seconds, more than a
// time.Duration holds) wrapped around into a negative TTL, and every node of the Provisioner
// expired as it launched. It is the longest TTL instead.
func TestATTLTooLongForADurationNeverExpiresANode(t *testing.T) {
	provisioner := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring"})
	provisioner.Spec.TTLSecondsUntilExpired = ptr.To[int64](10_000_000_000)
	// A Provisioner of an hour beside it, whose old node does expire: the pass decides, and only
	// the overlong TTL keeps its nodes.
	hourly := builders.Provisioner(builders.ProvisionerOptions{Name: "hourly"})
	hourly.Spec.TTLSecondsUntilExpired = ptr.To[int64](3600)
	decisions := expiration.Decide(consolidation.Snapshot{
		Nodes: []scheduling.Node{node("young", "expiring", time.Minute), node("old", "expiring", 100*365*24*time.Hour),
			node("hourly-old", "hourly", 2*time.Hour)},
		Provisioners: []consolidation.Provisioner{
			{Provisioner: provisioner, InstanceTypes: fake.DefaultInstanceTypes()},
			{Provisioner: hourly, InstanceTypes: fake.DefaultInstanceTypes()},
		},
		Now: now,
	})
	expired := false
	for _, d := range decisions {
		if d.Node.Name == "hourly-old" {
			expired = true
			continue
		}
		t.Errorf("expired node %s (delete %t), younger than its ttlSecondsUntilExpired of 10000000000 s (317 years)", d.Node.Name, d.Delete)
	}
	if !expired {
		t.Error("the node past its ttlSecondsUntilExpired of an hour did not expire: the pass decided nothing")
	}
}
