package provisioning

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
)

// Plan is what one provisioning pass decides on a Snapshot.
type Plan struct {
	// Pending are the pods a new node would help, in a stable order.
	Pending []*corev1.Pod
	// Results place them: onto the room of existing and launching nodes (Bindings), onto new
	// nodes, or nowhere, with the reason. Nil when no pod is pending.
	Results *scheduling.Results
}

// PlanPending places the snapshot's pending pods on the room of its nodes (those still
// launching included) and on new nodes of the pools, each given with its instance types and
// what counts against its limits (Limited, LimitedNodePool). It does no I/O: the
// controller and `kubectl karpenter plan` run it alike. pack, when set, has the batch packer
// choose the new nodes' types within its budget (scheduling.Input.Pack).
func PlanPending(s *state.Snapshot, provisioners []scheduling.Pool, pack *scheduling.Packer) Plan {
	pending := s.Pending()
	if len(pending) == 0 {
		return Plan{}
	}
	in := PendingInput(s, pending, provisioners)
	in.Pack = pack
	return Plan{Pending: pending, Results: scheduling.Schedule(in)}
}

// Packer is the batch packer a pass plans with under --batch-packer-budget: none when the
// budget is not positive.
func Packer(budget time.Duration, clock clock.PassiveClock) *scheduling.Packer {
	if budget <= 0 {
		return nil
	}
	return &scheduling.Packer{Budget: budget, Clock: clock}
}

// PendingInput asks the scheduler where the pending pods go: onto the room of the snapshot's
// nodes or new nodes of the provisioners, as every planner asks it (state.Question).
func PendingInput(s *state.Snapshot, pending []*corev1.Pod, provisioners []scheduling.Pool) scheduling.Input {
	return s.Question().Input(pending, provisioners, s.Room())
}

// Limited is the provisioner as Plan takes it: with its instance types, and used, what counts
// against its limits.
func Limited(p *v1alpha5.Provisioner, instanceTypes []*cloudprovider.InstanceType, used corev1.ResourceList) scheduling.Pool {
	pool := scheduling.FromProvisioner(p, instanceTypes)
	pool.Used = used
	return pool
}

// LimitedNodePool is the NodePool as Plan takes it: with its instance types, used, what counts
// against its limits, and the --min-values-policy its minValues are held to.
func LimitedNodePool(np *v1.NodePool, instanceTypes []*cloudprovider.InstanceType, used corev1.ResourceList, policy scheduling.MinValuesPolicy) scheduling.Pool {
	pool := scheduling.FromNodePool(np, instanceTypes)
	pool.Used, pool.MinValuesPolicy = used, policy
	return pool
}

// Used is what the snapshot's nodes of the pool hold against its limits; the controller adds
// the launches it has in flight.
func Used(s *state.Snapshot, pool pools.Key) corev1.ResourceList {
	return NewLedger().Used(pool, Counted(s.AllNodes(), pool, s.InstanceTypes))
}
