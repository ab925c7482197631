package provisioning_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestReplacementReservesUnderLimits: a replacement's launch counts against the Provisioner's
// limits in the ledger the other launches share, beside the nodes the snapshot counted.
func TestReplacementReservesUnderLimits(t *testing.T) {
	p, planned, counted, cloud, l, ledger := limitedReplacement()

	node, err := provisioning.LaunchReplacement(t.Context(), l, planned, launcher.Pool{Provisioner: p}, provisioning.ReplacementOptions{Ledger: ledger, Counted: counted})
	if err != nil {
		t.Fatalf("the first 2 cpus fit under the limit of 10 beside 8: %v", err)
	}
	// The cache has not shown the new node yet: its reservation still counts.
	_, err = provisioning.LaunchReplacement(t.Context(), l, planned, launcher.Pool{Provisioner: p}, provisioning.ReplacementOptions{Ledger: ledger, Counted: counted})
	if exceeded := (*provisioning.LimitExceededError)(nil); !errors.As(err, &exceeded) {
		t.Fatalf("a second launch past the limit returned %v, want a LimitExceededError", err)
	}
	if launches := len(cloud.CreateCalls()); launches != 1 {
		t.Errorf("%d instances launched, want 1", launches)
	}
	// Once the node is counted, its reservation is dropped and the limit still holds.
	counted[node.NodeName] = defaultInstanceType("t3.medium").Capacity
	if used := ledger.Used(pools.Provisioner(p.Name), counted); used.Cpu().Cmp(resource.MustParse("10")) != 0 {
		t.Errorf("used %s cpu, want 10", used.Cpu())
	}
}

// TestAReplacementInProgressKeepsItsRoom: a replacement launched and not read back
// (launcher.LaunchInProgressError) keeps its reservation for its NodeClaim: another launch past
// the limit is refused, the same decision made again finds its launch before reserving (so the
// limit does not refuse it), and once the snapshot counts the NodeClaim launched it counts once.
// (The code before released the reservation, and the second launch went past the limit; then it
// reserved before finding the decision's launch, and the limit refused that.)
func TestAReplacementInProgressKeepsItsRoom(t *testing.T) {
	p, planned, counted, cloud, l, ledger := limitedReplacement()
	launch := func(decision string) error {
		_, err := provisioning.LaunchReplacement(t.Context(), l, planned, launcher.Pool{Provisioner: p},
			provisioning.ReplacementOptions{Ledger: ledger, Counted: counted, Decision: decision})
		return err
	}
	cloud.SetUnreadLaunches(1)
	err := launch("expiration\nold")
	inProgress := (*launcher.LaunchInProgressError)(nil)
	if !errors.As(err, &inProgress) {
		t.Fatalf("the first launch returned %v, want a LaunchInProgressError", err)
	}
	if err := launch("expiration\nanother"); !errors.As(err, new(*provisioning.LimitExceededError)) {
		t.Errorf("a second launch past the limit returned %v, want a LimitExceededError", err)
	}
	if err := launch("expiration\nold"); err != nil {
		t.Errorf("the decision made again returned %v, want the node it launched", err)
	}
	if launches := len(cloud.CreateCalls()); launches != 1 {
		t.Errorf("%d instances launched, want 1", launches)
	}
	counted[inProgress.NodeClaim] = defaultInstanceType("t3.medium").Capacity
	if used := ledger.Used(pools.Provisioner(p.Name), counted); used.Cpu().Cmp(resource.MustParse("10")) != 0 {
		t.Errorf("used %s cpu once the nodeclaim is counted, want 10", used.Cpu())
	}
}

// TestReplacementRetriedGetsItsNodeUnlessOthersTookIt: the same decision launched again (a pass
// after a crash) gets the instance the first launch made, unless the snapshot counts that node
// already: then other pods took the room it was launched for (as with an expired node's
// replacement that kube-scheduler filled before the expired node was deleted), and answering
// with it again would make the decision come back for ever.
func TestReplacementRetriedGetsItsNodeUnlessOthersTookIt(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	planned := &scheduling.NewNode{Pool: pools.Provisioner(p.Name), InstanceTypes: []*cloudprovider.InstanceType{defaultInstanceType("t3.medium")}}
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	c := kubefake.NewClientBuilder().Build()
	l := launcher.New(c, nil, cloud, 0)
	launch := func(counted ...string) string {
		t.Helper()
		existing := map[string]corev1.ResourceList{"old": builders.Resources("cpu", "8")}
		for _, name := range counted {
			existing[name] = defaultInstanceType("t3.medium").Capacity
		}
		node, err := provisioning.LaunchReplacement(t.Context(), l, planned, launcher.Pool{Provisioner: p}, provisioning.ReplacementOptions{Counted: existing, Decision: "expiration\nold"})
		if err != nil {
			t.Fatal(err)
		}
		return node.NodeName
	}
	first := launch()
	if again := launch(); again != first {
		t.Errorf("retried before the snapshot counted %s: launched %s", first, again)
	}
	second := launch(first)
	if second == first {
		t.Fatalf("a node the snapshot counts (%s) was given again", first)
	}
	if again := launch(first); again != second {
		t.Errorf("retried once %s was taken: launched %s, want %s again", first, again, second)
	}
	if instances, err := cloud.List(t.Context()); err != nil || len(instances) != 2 {
		t.Errorf("%d instances (%v), want 2", len(instances), err)
	}
}

// limitedReplacement is a replacement's launch of a t3.medium (2 cpus) for a Provisioner limited
// to 10 cpus whose nodes the snapshot counted at 8: room for one such node.
func limitedReplacement() (*v1alpha5.Provisioner, *scheduling.NewNode, map[string]corev1.ResourceList, *fake.InstanceProvider, *launcher.Launcher, *provisioning.Ledger) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	p.Spec.Limits = &v1alpha5.Limits{Resources: builders.Resources("cpu", "10")}
	planned := &scheduling.NewNode{Pool: pools.Provisioner(p.Name), InstanceTypes: []*cloudprovider.InstanceType{defaultInstanceType("t3.medium")}}
	counted := map[string]corev1.ResourceList{"old": builders.Resources("cpu", "8")}
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	return p, planned, counted, cloud, launcher.New(kubefake.NewClientBuilder().Build(), nil, cloud, 0), provisioning.NewLedger()
}

func defaultInstanceType(name string) *cloudprovider.InstanceType {
	for _, it := range fake.DefaultInstanceTypes() {
		if it.Name == name {
			return it
		}
	}
	panic("no instance type " + name)
}
