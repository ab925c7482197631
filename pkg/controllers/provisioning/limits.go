package provisioning

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
)

// Ledger makes pools' limits hard (Provisioners' and NodePools'): a launch reserves, under one lock, the capacity of
// the largest instance type it may become, against what the provisioner's nodes already hold
// and what launches still in flight reserved. The Node of a launch is counted from the
// cluster once it is seen there (as a Node, or as its launched NodeClaim: Counted), and its
// reservation is dropped then; so is the reservation of a Node the cache showed that a later
// read of the cluster no longer holds, or of a NodeClaim a launch still in progress was handed
// to that the API server no longer holds (ForgetGone). So concurrent launches, of one batch or
// of several, never sum past a limit, however stale the cache, and a Node gone before any pass
// counted it frees its room.
// One Ledger is shared by every controller that launches: provisioning, consolidation's
// replacements and expiry's.
type Ledger struct {
	mu       sync.Mutex
	next     int
	inFlight map[int]*reservation
	// cached numbers the Nodes of reservations the cache was seen to show (NodeCached), in order.
	cached uint64
}

type reservation struct {
	pool     pools.Key
	capacity corev1.ResourceList
	// nodeName is set once the instance launched, nodeClaim once its NodeClaim is known; the
	// reservation stands until a node of either name is counted.
	nodeName, nodeClaim string
	// node is the UID of its Node once the cache showed it, and cachedAt the ledger's count of
	// such sightings (and hand-overs) then.
	node     types.UID
	cachedAt uint64
	// handedOver is whether the launch was handed to its NodeClaim still in progress (HandOver).
	handedOver bool
}

// NewLedger is a ledger with nothing reserved.
func NewLedger() *Ledger { return &Ledger{inFlight: map[int]*reservation{}} }

// Counted is what each node the pool launched counts against its limits, by node name: its
// capacity and one node (see withNode). A node the kubelet has not reported on yet counts as
// its instance type. nodes are a snapshot's AllNodes, so that a NodeClaim launched whose Node
// has not registered counts too, under its own name: launched before a restart, no reservation
// of this process's ledger stands for it. A node registered for a NodeClaim is also named by its
// NodeClaim, counting nothing more, so that a reservation handed to the NodeClaim (HandOver)
// finds it counted all its life.
func Counted(nodes []corev1.Node, pool pools.Key, instanceTypes map[string]*cloudprovider.InstanceType) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for i := range nodes {
		node := &nodes[i]
		if key, ok := pools.Of(node.Labels); !ok || key != pool {
			continue
		}
		capacity := node.Status.Capacity
		if len(capacity) == 0 {
			if it, ok := instanceTypes[node.Labels[corev1.LabelInstanceTypeStable]]; ok {
				capacity = it.Capacity
			}
		}
		out[node.Name] = withNode(capacity)
	}
	for i := range nodes {
		if owner, ok := nodeclaims.Owner(&nodes[i]); ok {
			if _, counted := out[nodes[i].Name]; counted {
				if _, taken := out[owner]; !taken {
					out[owner] = corev1.ResourceList{}
				}
			}
		}
	}
	return out
}

// withNode is what a node of this capacity counts against its pool's limits: the capacity, and
// as v1.LimitNodes one node, which a NodePool's limits.nodes bounds.
func withNode(capacity corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	out[v1.LimitNodes] = oneNode
	return out
}

// oneNode is a node's count against a limit on v1.LimitNodes.
var oneNode = *resource.NewQuantity(1, resource.DecimalSI)

// LimitExceededError is returned when no candidate of a launch fits under a limit.
type LimitExceededError struct {
	Pool        pools.Key
	Resource    corev1.ResourceName
	Used, Limit resource.Quantity
}

func (e *LimitExceededError) Error() string {
	return fmt.Sprintf("%s is at its %s limit: %s of %s in use or launching", e.Pool, e.Resource, e.Used.String(), e.Limit.String())
}

// used is what counts against the provisioner's limits: the capacity of its nodes (by name)
// and of its launches whose Node is not among them. Reservations whose Node is counted are
// dropped. The caller holds mu.
func (l *Ledger) used(pool pools.Key, nodes map[string]corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, capacity := range nodes {
		addTo(total, capacity)
	}
	for id, r := range l.inFlight {
		if r.pool != pool {
			continue
		}
		if r.countedIn(nodes) {
			delete(l.inFlight, id)
			continue
		}
		addTo(total, r.capacity)
	}
	return total
}

// countedIn reports whether nodes, counted by name, hold the reservation's node.
func (r *reservation) countedIn(nodes map[string]corev1.ResourceList) bool {
	for _, name := range []string{r.nodeName, r.nodeClaim} {
		if _, counted := nodes[name]; counted && name != "" {
			return true
		}
	}
	return false
}

// Used is what counts against the provisioner's limits now, given its nodes' capacity by
// name.
func (l *Ledger) Used(pool pools.Key, nodes map[string]corev1.ResourceList) corev1.ResourceList {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used(pool, nodes)
}

// reserveSpread bounds, under limits, the candidates a launch keeps: none larger in a limited
// resource than this many times the cheapest that fits under the limits. A node's pods fit its
// cheapest candidate; the larger ones are only fallbacks should the cloud have no capacity
// for the cheaper, and reserving room for a node several times its size held back the rest of
// its batch (the getting-started Provisioner's 1,000 CPUs launched 6 of a batch's 14 small
// nodes at a time, each reserving a 192-CPU type).
const reserveSpread = 2

// Reserve keeps the candidates (cheapest first) whose instance type fits under limits (nil:
// no limits) beside what is used and, under limits, is within reserveSpread of the cheapest of
// those in every limited resource, and beyond the spread those that give the values of a key
// the others lack for the pool's minValues (nil: none), and without minValues only those of the
// cheapest maxInstanceTypes instance types; it reserves the largest it keeps. It
// returns *LimitExceededError when none fits. The candidates come back as given when all are
// kept: the caller must not change them.
func (l *Ledger) Reserve(pool pools.Key, limits corev1.ResourceList, nodes map[string]corev1.ResourceList, candidates []cloudprovider.Candidate, minValues map[string]int) ([]cloudprovider.Candidate, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var used corev1.ResourceList
	if len(limits) > 0 {
		// Without limits nothing counts against them: summing every node and launch of the pool
		// for each node of a batch made a large batch's reservations quadratic.
		used = l.used(pool, nodes)
	}
	var kept, beyondSpread []int
	var exceeded *LimitExceededError
	for i, c := range candidates {
		if err := nodeFitsUnder(pool, limits, used, c.InstanceType.Capacity); err != nil {
			exceeded = err
			continue
		}
		if len(kept) > 0 && !withinSpread(limits, candidates[kept[0]].InstanceType.Capacity, c.InstanceType.Capacity) {
			beyondSpread = append(beyondSpread, i)
			continue
		}
		kept = append(kept, i)
	}
	if len(kept) == 0 {
		if exceeded == nil {
			return nil, 0, fmt.Errorf("launching for %s, no candidate instance types", pool)
		}
		return nil, 0, exceeded
	}
	kept = keepMinValues(candidates, kept, beyondSpread, minValues)
	if len(minValues) == 0 {
		kept = cheapestTypes(candidates, kept)
	}
	out := candidates
	if len(kept) < len(candidates) {
		out = make([]cloudprovider.Candidate, 0, len(kept))
		for _, i := range kept {
			out = append(out, candidates[i])
		}
	}
	reserved := corev1.ResourceList{}
	for _, c := range out {
		maxInto(reserved, c.InstanceType.Capacity)
	}
	reserved[v1.LimitNodes] = oneNode
	l.next++
	l.inFlight[l.next] = &reservation{pool: pool, capacity: reserved}
	return out, l.next, nil
}

// maxInstanceTypes bounds the instance types a launch keeps, ranked by their cheapest offering,
// as upstream's NodeClaims list at most 60: a NodeClaim's requirements name each type it may
// launch as, and a small pod's 1,200 candidates on the real catalogue (400 types in three zones)
// made each NodeClaim of a large batch several times larger to write, validate and watch. Every
// zone and capacity type of a kept type stays. The price: a launch falls back on insufficient
// capacity through those types' offerings only (the AWS provider offers 60 candidates a call and
// went on through the rest), then its pods wait for the next pass, which no longer counts the
// offerings that had no capacity.
const maxInstanceTypes = 60

// cheapestTypes keeps of kept, indices of candidates cheapest first, those of the first
// maxInstanceTypes instance types.
func cheapestTypes(candidates []cloudprovider.Candidate, kept []int) []int {
	types := sets.New[string]()
	return slices.DeleteFunc(kept, func(i int) bool {
		name := candidates[i].InstanceType.Name
		if types.Has(name) {
			return false
		}
		if types.Len() == maxInstanceTypes {
			return true
		}
		types.Insert(name)
		return false
	})
}

// keepMinValues adds to kept, indices of candidates, those of extra, cheapest first, that give
// a value of a key kept gives fewer of than minValues asks, until kept gives enough or extra
// none; the indices come back in the candidates' order. Launch flexibility is what minValues
// buys, so it outweighs the spread's bound on what a launch reserves.
func keepMinValues(candidates []cloudprovider.Candidate, kept, extra []int, minValues map[string]int) []int {
	selected := func() []cloudprovider.Candidate {
		out := make([]cloudprovider.Candidate, len(kept))
		for j, i := range kept {
			out[j] = candidates[i]
		}
		return out
	}
	for key, _ := cloudprovider.MinValuesUnmet(selected(), minValues); key != ""; key, _ = cloudprovider.MinValuesUnmet(selected(), minValues) {
		values := map[string]bool{}
		for _, i := range kept {
			if v, ok := candidates[i].LabelValue(key); ok {
				values[v] = true
			}
		}
		next := slices.IndexFunc(extra, func(i int) bool {
			v, ok := candidates[i].LabelValue(key)
			return ok && !values[v]
		})
		if next < 0 {
			return kept
		}
		kept = append(kept, extra[next])
		extra = slices.Delete(extra, next, next+1)
		slices.Sort(kept)
	}
	return kept
}

// Launched narrows a reservation to the instance type launched, until a node named after its
// Node (nodeName, "" while unknown) or its NodeClaim is counted. An empty capacity (a type the
// caller does not know) keeps the room reserved.
func (l *Ledger) Launched(id int, nodeClaim, nodeName string, capacity corev1.ResourceList) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.inFlight[id]; ok {
		r.nodeClaim, r.nodeName = nodeClaim, nodeName
		if len(capacity) > 0 {
			r.capacity = withNode(capacity)
		}
	}
}

// capacityOf is what a launch of the instance type holds, for Launched: nil for a type not known.
func capacityOf(it *cloudprovider.InstanceType) corev1.ResourceList {
	if it == nil {
		return nil
	}
	return it.Capacity
}

// HandOver keeps a reservation whose launch is still in progress (launcher.LaunchInProgressError)
// for its NodeClaim: it stands until the NodeClaim is counted, launched (Counted), or the API
// server, asked once a read of the cluster begun after the hand-over lacks it, no longer holds
// it (UnshownHandOvers, ForgetGone). Released instead, its room would be free until a pass saw
// the NodeClaim launched, and another launch could take it past the pool's limits.
func (l *Ledger) HandOver(id int, nodeClaim string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.inFlight[id]; ok {
		l.cached++
		r.nodeClaim, r.handedOver, r.cachedAt = nodeClaim, true, l.cached
	}
}

// NodeCached records that the cache shows the Node, of that UID, created for a reservation.
func (l *Ledger) NodeCached(id int, node types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.inFlight[id]; ok && r.cachedAt == 0 {
		l.cached++
		r.node, r.cachedAt = node, l.cached
	}
}

// Cached is how many reservations' Nodes the cache was seen to show, and reservations were
// handed over, so far. Read before the cluster is, it is what ForgetGone is given with what was
// read.
func (l *Ledger) Cached() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cached
}

// UnshownHandOvers are the NodeClaims of the reservations handed over by the time cached was
// read (Cached, HandOver) that nodeClaims, read after that, do not hold: deleted, or created a
// moment before the hand-over and not in the cache yet, which a read begun later may still lag.
// Only the API server can tell the two apart; ForgetGone is given those it no longer holds.
func (l *Ledger) UnshownHandOvers(nodeClaims []v1.NodeClaim, cached uint64) []string {
	claimed := make(sets.Set[string], len(nodeClaims))
	for i := range nodeClaims {
		claimed.Insert(nodeClaims[i].Name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var unshown []string
	for _, r := range l.inFlight {
		if r.handedOver && r.cachedAt <= cached && !claimed.Has(r.nodeClaim) {
			unshown = append(unshown, r.nodeClaim)
		}
	}
	slices.Sort(unshown)
	return unshown
}

// ForgetGone drops the reservations whose Node the cache showed by the time cached was read
// (Cached) and that nodes, every Node of the cluster read after that, no longer hold by name and
// UID: deleted, or replaced by another Node of the name, before a pass counted them, they hold
// no room. So do those handed over (HandOver) whose NodeClaim the API server no longer holds
// (goneClaims, of UnshownHandOvers).
func (l *Ledger) ForgetGone(nodes []corev1.Node, goneClaims sets.Set[string], cached uint64) {
	present := make(map[string]types.UID, len(nodes))
	for i := range nodes {
		present[nodes[i].Name] = nodes[i].UID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range l.inFlight {
		if r.cachedAt == 0 || r.cachedAt > cached {
			continue
		}
		if r.handedOver && goneClaims.Has(r.nodeClaim) || !r.handedOver && present[r.nodeName] != r.node {
			delete(l.inFlight, id)
		}
	}
}

// Release drops a reservation whose launch failed.
func (l *Ledger) Release(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, id)
}

// withinSpread reports whether capacity is at most reserveSpread times cheapest's in every
// resource limits bound.
func withinSpread(limits, cheapest, capacity corev1.ResourceList) bool {
	for name := range limits {
		bound := cheapest[name].DeepCopy()
		bound.Mul(reserveSpread)
		if c := capacity[name]; c.Cmp(bound) > 0 {
			return false
		}
	}
	return true
}

// nodeFitsUnder reports the first limited resource that used plus a node of the capacity would
// exceed (the node counting as withNode says, without copying the capacity for each candidate of
// each node of a batch: that was most of a large pass's time before its first launch).
func nodeFitsUnder(pool pools.Key, limits, used, capacity corev1.ResourceList) *LimitExceededError {
	for name, limit := range limits {
		total := used[name].DeepCopy()
		if name == v1.LimitNodes {
			total.Add(oneNode)
		} else if add, ok := capacity[name]; ok {
			total.Add(add)
		}
		if total.Cmp(limit) > 0 {
			return &LimitExceededError{Pool: pool, Resource: name, Used: used[name].DeepCopy(), Limit: limit.DeepCopy()}
		}
	}
	return nil
}

func addTo(total, add corev1.ResourceList) {
	for name, q := range add {
		sum := total[name].DeepCopy()
		sum.Add(q)
		total[name] = sum
	}
}

func maxInto(max, other corev1.ResourceList) {
	for name, q := range other {
		if current, ok := max[name]; !ok || q.Cmp(current) > 0 {
			max[name] = q.DeepCopy()
		}
	}
}
