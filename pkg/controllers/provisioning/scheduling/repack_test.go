package scheduling_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// cheapOverLimits is a pool with 6 cpus left whose cheapest type, 8 cpus, takes it over them.
func cheapOverLimits() scheduling.Pool {
	return scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "limited", Limits: builders.Resources("cpu", "6")}),
		[]*cloudprovider.InstanceType{
			workloads.InstanceType("small", "amd64", 2, 4, 10, 0.2),
			workloads.InstanceType("big-cheap", "amd64", 8, 16, 40, 0.15),
		})
}

// TestLimitsGiveWayToDearerTypes: where the cheapest type that holds the pods takes a pool over
// its limits, the pods go to a dearer type within them instead of staying pending.
func TestLimitsGiveWayToDearerTypes(t *testing.T) {
	in := scheduling.Input{Pods: builders.Pods(6, builders.PodOptions{Requests: requests("800m", "1Gi")}), Pools: []scheduling.Pool{cheapOverLimits()}}
	r := scheduling.Schedule(in)
	for _, err := range check.Verify(in, r) {
		t.Error(err)
	}
	wantUnschedulable(t, r, 0, "")
	wantNodes(t, r, 3)
	for _, n := range r.NewNodes {
		wantFirstType(t, n, "small")
	}
}

// TestPackerGrowsNodesRatherThanOpeningOne: where every new node of a group holds a pod that
// cannot move (here one pod per node of a hostname anti-affinity: the shared workload without
// its other terms), the program's optimum may round to a node more than the group has, which
// repack cannot open. The packing is made to fit by growing nodes instead of being thrown away.
func TestPackerGrowsNodesRatherThanOpeningOne(t *testing.T) {
	in := workloadInput(1000)
	withoutTerms(in.Pods, workloadTerms)
	greedy := scheduling.Schedule(in)
	in.Pack = unboundedPacker()
	r := scheduling.Schedule(in)
	verifyWorkload(t, in, r)
	if r.Packed.Repacked == 0 || r.Price() >= greedy.Price() {
		t.Errorf("packer repacked %d of %d groups at %.2f usd/hr; want a packing cheaper than the greedy's %.2f", r.Packed.Repacked, r.Packed.Groups, r.Price(), greedy.Price())
	}
}

// TestRestorePutsTheGroupBack: a packing that fails puts every node of its group back on the
// type it had, even where room freed under the pool's limits since would let a node take a
// cheaper type the limits had kept it off (which the nodes after it may then lack room for).
func TestRestorePutsTheGroupBack(t *testing.T) {
	pool := scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "limited", Limits: builders.Resources("cpu", "10")}),
		[]*cloudprovider.InstanceType{
			workloads.InstanceType("small", "amd64", 2, 4, 10, 0.2),
			workloads.InstanceType("big-cheap", "amd64", 8, 16, 40, 0.15),
		})
	in := scheduling.Input{Pods: builders.Pods(10, builders.PodOptions{Requests: requests("800m", "1Gi")}), Pools: []scheduling.Pool{pool}}
	before, after, refused := scheduling.FailedMoveRestored(in, 6000)
	if !refused {
		t.Fatalf("the move of every pod onto one node was taken; the test needs it refused")
	}
	if !slices.Equal(before, after) {
		t.Errorf("types after the refused move %v, want those before %v", after, before)
	}
}

// TestRepackKeepsPlansValid: the batch packer chooses types for nodes it cannot empty too, and
// must hold them to what the one-pod-at-a-time scheduler held them to. Each case is a plan the
// packer could make cheaper by breaking a rule; with the packer the plan passes the checker
// and costs no more than without it.
func TestRepackKeepsPlansValid(t *testing.T) {
	withPort := func(cpu string) *corev1.Pod {
		pod := portPod(port("", "", 9100))
		pod.Spec.Containers[0].Resources.Requests = requests(cpu, "1Gi")
		return pod
	}
	for _, tc := range []struct {
		name string
		in   scheduling.Input
	}{{
		// Six 1-cpu pods fill an arm-8 node; a seventh binding port 9100, which the arm64
		// type's own daemonset binds, opens an amd-2 node. Were the two nodes one group, the
		// port's node would be given arm-8 to hold all seven.
		name: "a node binding a host port keeps off the types whose daemonsets bind it",
		in: scheduling.Input{
			Pods:          append(builders.Pods(6, builders.PodOptions{Requests: requests("1", "1Gi")}), withPort("1")),
			DaemonSetPods: []*corev1.Pod{onArch(portPod(port("", "", 9100)), "arm64")},
			Pools: []scheduling.Pool{scheduling.FromProvisioner(builders.Provisioner(builders.ProvisionerOptions{Name: "ports"}), []*cloudprovider.InstanceType{
				workloads.InstanceType("amd-2", "amd64", 2, 8, 10, 0.1),
				workloads.InstanceType("arm-8", "arm64", 8, 32, 40, 0.2),
			})},
		},
	}, {
		// A pool with 6 cpus left launches 2-cpu nodes; an 8-cpu type cheaper than one of them
		// would hold every pod, but takes the pool over its limit.
		name: "a node keeps within its pool's limits",
		in: scheduling.Input{
			Pods:  builders.Pods(6, builders.PodOptions{Requests: requests("800m", "1Gi")}),
			Pools: []scheduling.Pool{cheapOverLimits()},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			greedy := scheduling.Schedule(tc.in)
			for _, err := range check.Verify(tc.in, greedy) {
				t.Errorf("without the packer: %v", err)
			}
			tc.in.Pack = unboundedPacker()
			packed := scheduling.Schedule(tc.in)
			for _, err := range check.Verify(tc.in, packed) {
				t.Errorf("with the packer: %v", err)
			}
			if len(packed.Bindings) != len(greedy.Bindings) || packed.Price() > greedy.Price()*(1+1e-9) {
				t.Errorf("with the packer %d pods placed for %.4f usd/hr, without %d for %.4f", len(packed.Bindings), packed.Price(), len(greedy.Bindings), greedy.Price())
			}
		})
	}
}
