package scheduling

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
)

// Node is an existing node and the pods bound to it.
type Node struct {
	Node *corev1.Node
	Pods []*corev1.Pod
	// CSINode declares, per CSI driver, how many volumes the node attaches
	// (spec.drivers[].allocatable.count); nil or a driver without a count means no limit, as
	// to kube-scheduler.
	CSINode *storagev1.CSINode
}

// Input is a snapshot of the cluster for one scheduling pass.
type Input struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Pools may launch new nodes: a pod goes to the highest-weighted that can take it.
	Pools []Pool
	// Nodes are filled, where they have room, before new nodes are opened.
	Nodes []Node
	// DaemonSetPods are one pod per daemonset; each runs on every new node it tolerates and
	// selects, so its requests are reserved there.
	DaemonSetPods []*corev1.Pod
	// PersistentVolumeClaims, PersistentVolumes and StorageClasses resolve the pending pods'
	// persistentVolumeClaim and ephemeral volumes: a claim bound to a volume keeps the pod to
	// the volume's node affinity and zone label, and an unbound WaitForFirstConsumer claim to
	// its class's allowedTopologies. A pod whose claim, volume or class is missing, or whose
	// claim waits for immediate binding, is unschedulable, as it is to kube-scheduler.
	// They also say which CSI driver attaches each volume: a node never gets more of a
	// driver's volumes, counting its pods' (so their claims belong here too), than the
	// instance type's VolumeLimits or the existing node's CSINode allow.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// Requests, when set, keeps the pods' requests between calls with the same pods; nil
	// computes them each time.
	Requests *RequestCache
	// Pack, when set, chooses new nodes' instance types against the whole batch once its pods
	// are placed (the batch packer, repack): where packing again the pods that may move among
	// interchangeable new nodes costs less, they move. Nil: the plan is the one-pod-at-a-time
	// scheduler's.
	Pack *Packer
}

// DefaultPackBudget is the batch packer's budget unless the controller's
// --batch-packer-budget says otherwise: well under the 1 s idle window of a batch, and about
// twice what the whole pass takes with the packer for 1,000 pods of the benchmark workload on
// the real catalogue (docs/benchmarks.md).
const DefaultPackBudget = 500 * time.Millisecond

// Packer bounds the batch packer's time, so that latency does not pay for cost: once Budget
// has passed on Clock since the packer began, it stops, and every group of nodes it has not
// packed yet keeps the one-pod-at-a-time plan's nodes (those it packed keep their cheaper
// packing: each is a whole plan, checked as any other). It looks at the clock before each
// group, each solve of a group's program and each type it prices, so it runs over by what it
// does between two looks: a solve (packMaxRows bounds the program's size), or a group's
// set-up, rounding and moves (docs/benchmarks.md has the overshoot measured).
type Packer struct {
	Budget time.Duration
	Clock  clock.PassiveClock
}

// Packed is what the batch packer did in a pass.
type Packed struct {
	// Ran is whether it was asked to (Input.Pack).
	Ran bool
	// Groups are the groups of interchangeable new nodes it began to weigh, and Repacked those
	// whose nodes it changed.
	Groups, Repacked int
	// Stopped is whether its budget ran out before it had weighed every group: the plan is
	// then partly the one-pod-at-a-time scheduler's.
	Stopped bool
	// Took is how long it took, on the Packer's clock.
	Took time.Duration
}

// Planner names what made the plan: "packer" when the batch packer weighed every group (it may
// have kept them all), "packer-stopped" when its budget ran out first, "greedy" when it was not
// asked.
func (p Packed) Planner() string {
	switch {
	case !p.Ran:
		return "greedy"
	case p.Stopped:
		return "packer-stopped"
	default:
		return "packer"
	}
}

// NewNode is a node the pass decided to launch.
type NewNode struct {
	// Hostname stands for the node until it exists; it is unique within Results.
	Hostname string
	Pool     pools.Key
	// Requirements are the labels the node must carry for its pods' constraints to hold.
	Requirements []corev1.NodeSelectorRequirement
	Taints       []corev1.Taint
	// Labels are the values the pool chose for the node on the keys it chooses itself (a
	// requirement on a key no instance type carries, as upstream's "capacity-spread" pattern
	// writes): the launch stamps them on the node. Nil when the pool chooses none.
	Labels map[string]string
	// InstanceTypes may each launch the node, cheapest first; all fit the pods and meet the
	// requirements in at least one available offering. Nodes may share the list: read it only.
	InstanceTypes []*cloudprovider.InstanceType
	// Price is the hourly price of the cheapest offering the node may launch as.
	Price float64
	Pods  []*corev1.Pod
	// MinValuesRelaxed is whether InstanceTypes keep fewer distinct values of a key than the
	// pool's minValues: under MinValuesBestEffort, or under a pool's limits, which leave it
	// fewer instance types to grow into than minValues asks.
	MinValuesRelaxed bool

	// alloc is the cheapest of InstanceTypes' allocatable and used what the pods and daemonsets
	// take of it, indexed by index (shared by the nodes of one pass); read only.
	alloc, used resources
	index       resourceIndex
}

// Filled are the nodes on which none of pods fits in the room their cheapest instance type has
// left: more pods would only give them a larger type or open another node. A node whose room
// is unknown (not from Schedule) is not one.
func Filled(nodes []*NewNode, pods []*corev1.Pod) []*NewNode {
	i := slices.IndexFunc(nodes, func(n *NewNode) bool { return n.alloc != nil })
	if i < 0 {
		return nil
	}
	index := nodes[i].index
	requests := make([]resources, 0, len(pods))
	for _, pod := range pods {
		requests = append(requests, index.podVector(podRequests(pod)))
	}
	var out []*NewNode
	for _, n := range nodes {
		if n.alloc != nil && !slices.ContainsFunc(requests, func(r resources) bool { return fitsWith(n.alloc, n.used, r) }) {
			out = append(out, n)
		}
	}
	return out
}

// Binding assigns a pod to an existing node's name or a NewNode's Hostname.
type Binding struct {
	Pod      *corev1.Pod
	NodeName string
}

// PodError explains why a pod could not be placed.
type PodError struct {
	Pod    *corev1.Pod
	Reason string
}

// Results of a scheduling pass.
type Results struct {
	NewNodes []*NewNode
	// Bindings are in the order the scheduler decided them. Binding pods in this order
	// reproduces the cluster state each topology constraint was checked against, as
	// kube-scheduler checks each pod against the cluster at the time it is bound.
	Bindings      []Binding
	Unschedulable []PodError
	// Packed is what the batch packer did.
	Packed Packed
}

// Price is the hourly price of the new nodes, each at its cheapest offering.
func (r *Results) Price() float64 {
	total := 0.0
	for _, n := range r.NewNodes {
		total += n.Price
	}
	return total
}
