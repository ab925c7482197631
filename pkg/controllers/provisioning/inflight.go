package provisioning

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// inFlight are the batches whose launches run in the background while later passes plan. A
// pass must not launch again for their pods, yet until a launched node is in the cache the
// snapshot shows neither the node nor its room. So a pod of a planned node whose Node the
// snapshot does not show is left out of the pass. Once the snapshot shows the Node, the pod is
// counted on that node's room, as if nominated there, until its batch has bound or nominated it
// (the batch binds only once the registration settled): planned again meanwhile, it could be
// planned elsewhere and other pods onto its room, which the batch then binds it to all the
// same. Each planned node's pods fit its room, so what is left out and what is not shown are
// the same room.
type inFlight struct {
	mu      sync.Mutex
	batches sets.Set[*launchBatch]
	// unread are planned nodes whose instance launched but could not be read back: they keep
	// their pods, past the end of their batch, until it is read and the snapshot shows its Node,
	// or it is gone.
	unread sets.Set[*plannedLaunch]
}

// launchBatch is one pass's launches: done is closed once the last of them ended, its Nodes
// were opened (when held) and the cache shows them.
type launchBatch struct {
	nodes []*plannedLaunch
	done  chan struct{}
}

// plannedLaunch is a planned node of a batch. Its fields change under inFlight.mu.
type plannedLaunch struct {
	provisioner string
	pods        []types.UID
	// nodeClaim is the name of its NodeClaim once created, before its launch: the NodeClaim's
	// launching node stands in the snapshot for its Node from the moment the cache shows its
	// instance recorded until the Node registers (state.Snapshot.AllNodes). nodeName is set once
	// the instance launched, before its Node is created.
	nodeClaim, nodeName string
	// failed is set when no instance (or no Node) came of it: its pods are pending again.
	failed bool
	// unread is its instance while the cloud could not read it back.
	unread *unreadLaunch
}

// unreadLaunch is an instance launched for the index-th node of a reserved launch, as the
// launch's answer told it.
type unreadLaunch struct {
	launch   *reservedLaunch
	index    int
	instance *cloudprovider.Instance
}

func newInFlight() *inFlight {
	return &inFlight{batches: sets.New[*launchBatch](), unread: sets.New[*plannedLaunch]()}
}

// start records a batch of planned nodes, by provisioner and pods.
func (f *inFlight) start(nodes []*plannedLaunch) *launchBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &launchBatch{nodes: nodes, done: make(chan struct{})}
	f.batches.Insert(b)
	return b
}

// plannedFor is the planned node of a batch with the pods of n.
func plannedFor(provisioner string, pods []*corev1.Pod) *plannedLaunch {
	uids := make([]types.UID, len(pods))
	for i, pod := range pods {
		uids[i] = pod.UID
	}
	return &plannedLaunch{provisioner: provisioner, pods: uids}
}

// claimed records the name of a planned node's NodeClaim, before its instance is launched and
// recorded on it: a pass that sees the record in the cache must count the pods there, though
// the launch has not returned yet.
func (f *inFlight) claimed(n *plannedLaunch, nodeClaim string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n.nodeClaim = nodeClaim
}

// launched records the name of the node a planned node's instance registers as.
func (f *inFlight) launched(n *plannedLaunch, nodeName string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n.nodeName = nodeName
}

// failed records that a planned node will not come: its pods are planned again.
func (f *inFlight) failed(n *plannedLaunch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n.failed = true
}

// awaitRead records that a planned node's instance launched but could not be read back.
func (f *inFlight) awaitRead(n *plannedLaunch, u *unreadLaunch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n.unread = u
	f.unread.Insert(n)
}

// toRead are the planned nodes whose instance is still to be read back, and settles the others:
// those whose Node the snapshot shows (their pods are planned like any pod's) or that failed.
func (f *inFlight) toRead(shown sets.Set[string]) []*plannedLaunch {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*plannedLaunch
	for n := range f.unread {
		switch {
		case n.failed || (n.nodeName != "" && shown.Has(n.nodeName)):
			f.unread.Delete(n)
		case n.nodeName == "":
			out = append(out, n)
		}
	}
	return out
}

// finish forgets a batch whose Nodes the cache shows.
func (f *inFlight) finish(b *launchBatch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches.Delete(b)
	close(b.done)
}

// capture is the batches in flight. A pass captures them before it reads its snapshot: a
// batch finished by then has its Nodes in the cache the snapshot reads, and one captured
// keeps its planned nodes' names, read after the snapshot, even if it finishes meanwhile.
func (f *inFlight) capture() []*launchBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batches.UnsortedList()
}

// awaitedPod is a pod a batch in flight planned, with the provisioner planned for it and the
// node its batch launched for it when the snapshot shows that node, or the launching node of its
// NodeClaim standing for it ("" when it shows neither).
type awaitedPod struct {
	provisioner, node string
}

// awaited are the pods of the captured batches, and of the instances still to be read back,
// that wait for their batch to place them: those of failed planned nodes are pending again.
// shown are the names of the snapshot's nodes, those standing for NodeClaims included.
func (f *inFlight) awaited(captured []*launchBatch, shown sets.Set[string]) map[types.UID]awaitedPod {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]awaitedPod{}
	await := func(n *plannedLaunch) {
		if n.failed {
			return
		}
		node := ""
		switch {
		case n.nodeName != "" && shown.Has(n.nodeName):
			node = n.nodeName
		case n.nodeClaim != "" && shown.Has(n.nodeClaim):
			node = n.nodeClaim
		}
		for _, uid := range n.pods {
			out[uid] = awaitedPod{provisioner: n.provisioner, node: node}
		}
	}
	for _, b := range captured {
		for _, n := range b.nodes {
			await(n)
		}
	}
	for n := range f.unread {
		await(n)
	}
	return out
}

// nodeNames are the names of the captured batches' launched nodes: a held one is held by its
// batch, not left over.
func (f *inFlight) nodeNames(captured []*launchBatch) sets.Set[string] {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := sets.New[string]()
	for _, b := range captured {
		for _, n := range b.nodes {
			if n.nodeName != "" {
				out.Insert(n.nodeName)
			}
		}
	}
	return out
}

// awaitBatches returns once the captured batches finished, false if ctx ended first.
func awaitBatches(ctx context.Context, captured []*launchBatch) bool {
	for _, b := range captured {
		select {
		case <-b.done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
