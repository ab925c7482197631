package provisioning

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/kubefake"
	"karpenter.sh/karpenter/pkg/test/kubelet"
)

func TestInFlightAwaited(t *testing.T) {
	for _, tc := range []struct {
		name string
		// claimed, nodeName and failed of the one planned node, for pods a and b (its NodeClaim
		// is "claim"); shown are the snapshot's nodes, those standing for NodeClaims among them.
		claimed  bool
		nodeName string
		failed   bool
		shown    []string
		// want are the awaited pods; onNode is the node they are counted on.
		want   []types.UID
		onNode string
	}{
		{name: "not launched yet: its pods wait", want: []types.UID{"a", "b"}},
		{name: "its NodeClaim created, not launched yet: its pods wait", claimed: true, want: []types.UID{"a", "b"}},
		{name: "its launch not returned yet, the instance recorded on its NodeClaim in the snapshot: its pods are counted there", claimed: true,
			shown: []string{"claim"}, want: []types.UID{"a", "b"}, onNode: "claim"},
		{name: "launched, its Node not in the snapshot: its pods wait", nodeName: "n", shown: []string{"other"}, want: []types.UID{"a", "b"}},
		{name: "its Node in the snapshot: its pods are counted on its room until the batch placed them", nodeName: "n", shown: []string{"n"},
			want: []types.UID{"a", "b"}, onNode: "n"},
		{name: "no Node yet, its NodeClaim's launching node in the snapshot: its pods are counted there", claimed: true, nodeName: "n", shown: []string{"claim"},
			want: []types.UID{"a", "b"}, onNode: "claim"},
		{name: "its Node and its NodeClaim's in the snapshot: its Node", claimed: true, nodeName: "n", shown: []string{"claim", "n"},
			want: []types.UID{"a", "b"}, onNode: "n"},
		{name: "failed: its pods are pending again", failed: true},
		{name: "launched then its Node failed", nodeName: "n", failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newInFlight()
			n := plannedFor("default", podsWithUIDs("a", "b"))
			f.start([]*plannedLaunch{n})
			captured := f.capture()
			if tc.claimed {
				f.claimed(n, "claim")
			}
			if tc.nodeName != "" {
				f.launched(n, tc.nodeName)
			}
			if tc.failed {
				f.failed(n)
			}
			awaited := f.awaited(captured, sets.New(tc.shown...))
			got := slices.Sorted(func(yield func(types.UID) bool) {
				for uid, a := range awaited {
					if a.provisioner != "default" || a.node != tc.onNode || !yield(uid) {
						return
					}
				}
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("awaited %v, want %v on node %q", awaited, tc.want, tc.onNode)
			}
		})
	}
}

// TestInFlightCapturedKeepsNamesOfAFinishedBatch: a batch that finishes after a pass captured
// it still says which nodes it launched, as the snapshot may predate its Nodes.
func TestInFlightCapturedKeepsNamesOfAFinishedBatch(t *testing.T) {
	f := newInFlight()
	n := plannedFor("default", podsWithUIDs("a"))
	b := f.start([]*plannedLaunch{n})
	captured := f.capture()
	f.claimed(n, "claim")
	f.launched(n, "n")
	f.finish(b)
	if len(f.capture()) != 0 {
		t.Error("a finished batch is still captured")
	}
	if names := f.nodeNames(captured); !names.Has("n") {
		t.Errorf("node names %v, want n", names)
	}
	if awaited := f.awaited(captured, sets.New[string]()); awaited["a"] != (awaitedPod{provisioner: "default"}) {
		t.Errorf("awaited %v, want a, its node not in the snapshot", awaited)
	}
	if !awaitBatches(context.Background(), captured) {
		t.Error("awaiting a finished batch did not return at once")
	}
}

// gatedCloud is the fake cloud whose Create calls that gated picks wait until open is closed
// (or their context ends), each announced on entered first.
type gatedCloud struct {
	*fake.InstanceProvider
	gated   func(cloudprovider.LaunchRequest) bool
	entered chan cloudprovider.LaunchRequest
	open    chan struct{}
	// launchAnyway makes a gated call whose context ended launch all the same, as a
	// CreateFleet that reached EC2 before the controller stopped.
	launchAnyway bool
}

func (g *gatedCloud) Create(ctx context.Context, request cloudprovider.LaunchRequest) ([]*cloudprovider.Instance, error) {
	if g.gated(request) {
		g.entered <- request
		select {
		case <-g.open:
		case <-ctx.Done():
			if !g.launchAnyway {
				return nil, ctx.Err()
			}
		}
	}
	return g.InstanceProvider.Create(ctx, request)
}

// passes is a controller on a fake API client and a gated fake cloud, and the pods it was
// given, by name.
type passes struct {
	c     *Controller
	cloud *gatedCloud
	kube  client.Client
}

func newPasses(t *testing.T, opts Options, funcs interceptor.Funcs, gated func(cloudprovider.LaunchRequest) bool, objects ...client.Object) *passes {
	t.Helper()
	// The controller's Reader, the API server itself, is the client without funcs.
	apiServer := kubefake.NewClientBuilder().WithObjects(objects...).Build()
	kube := interceptor.NewClient(apiServer, funcs)
	if opts.Reader == nil {
		opts.Reader = apiServer
	}
	cloud := &gatedCloud{InstanceProvider: fake.NewInstanceProvider(fake.InstanceProviderOptions{}), gated: gated,
		entered: make(chan cloudprovider.LaunchRequest, 100), open: make(chan struct{})}
	opts.Client, opts.InstanceProvider, opts.Recorder, opts.Clock = kube, cloud, record.NewFakeRecorder(1000), clocktesting.NewFakeClock(time.Now())
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	kubelet.Start(t, &kubelet.Kubelets{Client: kube, Instances: cloud.InstanceProvider, Register: true})
	return &passes{c: c, cloud: cloud, kube: kube}
}

// pending creates unschedulable pods with UIDs of their names.
func (s *passes) pending(t *testing.T, o builders.PodOptions, names ...string) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, name := range names {
		o.Name, o.Unschedulable = name, true
		pod := builders.Pod(o)
		pod.UID = types.UID(name)
		if err := s.kube.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		out = append(out, pod)
	}
	return out
}

// pass runs one pass and waits for the launches it started to end.
func (s *passes) pass(t *testing.T) {
	t.Helper()
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	s.settle(t)
}

// settle waits for every batch in flight.
func (s *passes) settle(t *testing.T) {
	t.Helper()
	if !awaitBatches(t.Context(), s.c.inFlight.capture()) {
		t.Fatal("the test ended with batches in flight")
	}
}

func (s *passes) nodes(t *testing.T) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := s.kube.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func onlyFirstCall() func(cloudprovider.LaunchRequest) bool {
	var once sync.Once
	return func(cloudprovider.LaunchRequest) bool {
		first := false
		once.Do(func() { first = true })
		return first
	}
}

// A pod of 1.5 CPU takes a 2-CPU node of its own.
var nodeSized = builders.PodOptions{Requests: builders.Resources("cpu", "1500m")}

// TestOverlappingBatchesNeverLaunchTwice: a pass planned while an earlier batch launches
// launches for its own pods only, whether the earlier batch's instance has not come back yet
// or its Node exists and the batch has not finished; once all finished, a pass launches
// nothing.
func TestOverlappingBatchesNeverLaunchTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		// nodeCreated holds the first batch after its Node exists rather than in its cloud
		// call.
		nodeCreated bool
	}{
		{name: "the first batch's cloud call under way"},
		{name: "the first batch's Node created, the batch not finished", nodeCreated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
			nodeCreated := make(chan struct{})
			holdNode := make(chan struct{})
			var once sync.Once
			funcs := interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				err := cl.Create(ctx, obj, opts...)
				if _, ok := obj.(*corev1.Node); ok && tc.nodeCreated {
					once.Do(func() {
						close(nodeCreated)
						<-holdNode
					})
				}
				return err
			}}
			gated := onlyFirstCall()
			if tc.nodeCreated {
				gated = func(cloudprovider.LaunchRequest) bool { return false }
			}
			s := newPasses(t, Options{}, funcs, gated, p)
			s.pending(t, nodeSized, "a")
			if _, err := s.c.provision(t.Context(), false); err != nil {
				t.Fatal(err)
			}
			if tc.nodeCreated {
				<-nodeCreated
			} else {
				<-s.cloud.entered
			}
			s.pending(t, nodeSized, "b")
			if _, err := s.c.provision(t.Context(), false); err != nil {
				t.Fatal(err)
			}
			if tc.nodeCreated {
				close(holdNode)
			} else {
				close(s.cloud.open)
			}
			s.settle(t)
			s.pass(t)
			calls := s.cloud.CreateCalls()
			var got []string
			for _, call := range calls {
				got = append(got, call.IdempotencyKey)
			}
			if len(calls) != 2 || got[0] == "" || got[0] == got[1] {
				t.Errorf("%d create calls, keys %v; want one for a and one for b, each its own launch", len(calls), got)
			}
			if nodes := s.nodes(t); len(nodes) != 2 {
				t.Errorf("%d nodes, want 2", len(nodes))
			}
		})
	}
}

// TestConcurrentPassesKeepLimits: a pass planned while an earlier batch's launch is under way
// counts that launch's reservation: the limit left no room, so it launches nothing, and the
// instances launched never sum past the limit.
func TestConcurrentPassesKeepLimits(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Limits: builders.Resources("cpu", "2")})
	s := newPasses(t, Options{}, interceptor.Funcs{}, onlyFirstCall(), p)
	s.pending(t, nodeSized, "a")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	<-s.cloud.entered
	s.pending(t, nodeSized, "b")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	close(s.cloud.open)
	s.settle(t)
	s.pass(t)
	var launched resource.Quantity
	for _, node := range s.nodes(t) {
		for _, it := range fake.DefaultInstanceTypes() {
			if it.Name == node.Labels[corev1.LabelInstanceTypeStable] {
				launched.Add(*it.Capacity.Cpu())
			}
		}
	}
	if calls := s.cloud.CreateCalls(); len(calls) != 1 || launched.Cmp(*p.Spec.Limits.Resources.Cpu()) > 0 {
		t.Errorf("%d create calls, %s CPU launched; want one call within the 2 CPU limit", len(calls), launched.String())
	}
}

// TestHoldReleasedAfterTheBatchsLastLaunch: a batch whose pods count domains holds its Nodes
// until its last launch, whatever passes run meanwhile; a pass whose pods count domains
// plans once the batch finished, seeing all its nodes.
func TestHoldReleasedAfterTheBatchsLastLaunch(t *testing.T) {
	spread := builders.PodOptions{Labels: map[string]string{"app": "spread"}, Requests: builders.Resources("cpu", "1500m"),
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": "spread"})}}
	zone := func(z string) []v1alpha5.NodeSelectorRequirement {
		return []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{z}}}
	}
	// Two Provisioners, so that the batch is two launches; the one in us-west-2b waits.
	a := builders.Provisioner(builders.ProvisionerOptions{Name: "a", Requirements: zone("us-west-2a")})
	b := builders.Provisioner(builders.ProvisionerOptions{Name: "b", Requirements: zone("us-west-2b")})
	var mu sync.Mutex
	var lastLaunched, releasedEarly bool
	held := make(chan struct{})
	var once sync.Once
	funcs := interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		err := cl.Create(ctx, obj, opts...)
		if node, ok := obj.(*corev1.Node); ok && slices.ContainsFunc(node.Spec.Taints, isLaunchingTaint) {
			once.Do(func() { close(held) })
		}
		return err
	}, Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*corev1.Node); ok {
			mu.Lock()
			releasedEarly = releasedEarly || !lastLaunched
			mu.Unlock()
		}
		return cl.Patch(ctx, obj, patch, opts...)
	}}
	s := newPasses(t, Options{}, funcs, func(r cloudprovider.LaunchRequest) bool { return r.ProvisionerName == "b" }, a, b)
	s.pending(t, spread, "x", "y")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	<-s.cloud.entered
	// The other launch's held Node exists: a pass meanwhile neither opens it nor plans.
	<-held
	s.pending(t, spread, "z")
	planned := make(chan error, 1)
	go func() {
		_, err := s.c.provision(t.Context(), false)
		planned <- err
	}()
	select {
	case err := <-planned:
		t.Fatalf("a pass whose pods count domains planned while a batch launched (%v)", err)
	default:
	}
	mu.Lock()
	lastLaunched = true
	mu.Unlock()
	close(s.cloud.open)
	if err := <-planned; err != nil {
		t.Fatal(err)
	}
	s.settle(t)
	if releasedEarly {
		t.Error("a Node was opened before the batch's last launch")
	}
	for _, node := range s.nodes(t) {
		if slices.ContainsFunc(node.Spec.Taints, isLaunchingTaint) {
			t.Errorf("node %s still held after its batch", node.Name)
		}
	}
	if calls := s.cloud.CreateCalls(); len(calls) != 3 {
		t.Errorf("%d create calls, want 2 for the first batch and 1 for z", len(calls))
	}
}

// TestPartialFulfilment: a group launch the cloud fills partially creates Nodes for what it
// got; the other pods stay pending and the next pass launches for them alone.
func TestPartialFulfilment(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default",
		Requirements: []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"c5.large"}}}})
	// One launch call at a time: the plan's three identical nodes are one group.
	s := newPasses(t, Options{LaunchConcurrency: 1}, interceptor.Funcs{}, func(cloudprovider.LaunchRequest) bool { return false }, p)
	s.cloud.SetCapacityPerCall(2)
	s.pending(t, nodeSized, "a", "b", "c")
	s.pass(t)
	calls := s.cloud.CreateCalls()
	if len(calls) != 1 || calls[0].Count != 3 {
		t.Fatalf("create calls %+v, want one for 3 nodes", calls)
	}
	if nodes := s.nodes(t); len(nodes) != 2 {
		t.Fatalf("%d nodes after the cloud launched 2 of 3, want 2", len(nodes))
	}
	s.pass(t)
	calls = s.cloud.CreateCalls()
	if len(calls) != 2 || calls[1].Count != 1 {
		t.Fatalf("create calls %+v, want a second for the one node left", calls)
	}
	s.pass(t)
	if calls := s.cloud.CreateCalls(); len(calls) != 2 || len(s.nodes(t)) != 3 {
		t.Errorf("%d create calls, %d nodes; want 2 and 3, nothing more once every pod has its node", len(calls), len(s.nodes(t)))
	}
}

// TestStopWaitsForLaunches: the loop returns only once the launches it started ended, and an
// instance the cloud launched as the controller stopped is still recorded, so that its kubelet's
// Node is registered for it.
func TestStopWaitsForLaunches(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{}, interceptor.Funcs{}, onlyFirstCall(), p)
	s.cloud.launchAnyway = true
	s.pending(t, nodeSized, "a")
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- s.c.run(ctx) }()
	s.c.batcher.poke()
	<-s.cloud.entered
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if len(s.c.inFlight.capture()) != 0 {
		t.Error("the loop returned with a batch in flight")
	}
	eventually.Holds(t, "the instance launched as the controller stopped has its Node", func() (bool, string, error) {
		nodes := s.nodes(t)
		instances, err := s.cloud.List(context.Background())
		if err != nil {
			return false, "", err
		}
		return len(instances) == 1 && len(nodes) == 1 && nodes[0].Spec.ProviderID == instances[0].ProviderID, fmt.Sprintf("%d instances, %d nodes", len(instances), len(nodes)), nil
	})
}

// TestAwaitedPodsCountAsPending: pods a batch in flight launches for are pending for their
// provisioner, and are not told again.
func TestAwaitedPodsCountAsPending(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{}, interceptor.Funcs{}, onlyFirstCall(), p)
	s.pending(t, nodeSized, "a")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	<-s.cloud.entered
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	var pending dto.Metric
	err := podsPending.WithLabelValues("default").Write(&pending)
	close(s.cloud.open)
	s.settle(t)
	if err != nil || pending.GetGauge().GetValue() != 1 {
		t.Errorf("karpenter_pods_pending{provisioner=default} = %v (%v) while its launch is under way, want 1", pending.GetGauge().GetValue(), err)
	}
	if _, ok := s.c.told["a"]; !ok {
		t.Error("the pod awaited was forgotten: it would be told of its node again")
	}
}

// TestAPodBoundMeanwhileTakesItsRoom: a pod a batch in flight launches for that kube-scheduler
// bound meanwhile to another node takes that node's room: a pass does not plan a pod there.
func TestAPodBoundMeanwhileTakesItsRoom(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{}, interceptor.Funcs{}, onlyFirstCall(), p)
	a := s.pending(t, nodeSized, "a")[0]
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	<-s.cloud.entered
	other := builders.Node(builders.NodeOptions{Name: "other", Ready: corev1.ConditionTrue,
		Allocatable: builders.Resources("cpu", "2", "memory", "8Gi", "pods", "10")})
	if err := s.kube.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	a.Spec.NodeName, a.Status.Conditions = other.Name, nil
	if err := s.kube.Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	s.pending(t, nodeSized, "b")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	close(s.cloud.open)
	s.settle(t)
	if calls := s.cloud.CreateCalls(); len(calls) != 2 {
		t.Errorf("%d create calls, want a second for b: a, bound, fills the other node", len(calls))
	}
}

// TestEarlyPassLaunchesFilledNodes: an early pass launches the nodes no pending pod fits into
// any more, a few of them once they have waited an idle gap (earlyHold), leaves a node whose pod
// counts domains to the closing pass, and the closing pass launches it without launching again
// for the others.
func TestEarlyPassLaunchesFilledNodes(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{EarlyLaunch: true}, interceptor.Funcs{}, func(cloudprovider.LaunchRequest) bool { return false }, p)
	s.pending(t, nodeSized, "a", "b")
	spread := nodeSized
	spread.Labels = map[string]string{"app": "spread"}
	spread.TopologySpread = []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": "spread"})}
	s.pending(t, spread, "c")
	if _, err := s.c.provision(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	s.settle(t)
	if nodes := s.nodes(t); len(nodes) != 0 {
		t.Fatalf("the first early pass launched %d nodes, want them held an idle gap", len(nodes))
	}
	s.c.clock.(*clocktesting.FakeClock).Step(s.c.window.idle)
	if _, err := s.c.provision(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	s.settle(t)
	if nodes := s.nodes(t); len(nodes) != 2 {
		t.Fatalf("the early pass launched %d nodes, want 2, for a and b", len(nodes))
	}
	s.pass(t)
	if nodes := s.nodes(t); len(nodes) != 3 {
		t.Fatalf("%d nodes after the closing pass, want 3", len(nodes))
	}
	s.pass(t)
	if nodes := s.nodes(t); len(nodes) != 3 {
		t.Errorf("%d nodes after another pass, want still 3", len(nodes))
	}
}

// TestEarlyPassLeavesNodesWithRoom: a node a pending pod still fits into waits for the close.
func TestEarlyPassLeavesNodesWithRoom(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{EarlyLaunch: true}, interceptor.Funcs{}, func(cloudprovider.LaunchRequest) bool { return false }, p)
	s.pending(t, builders.PodOptions{Requests: builders.Resources("cpu", "100m")}, "small")
	if _, err := s.c.provision(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	s.settle(t)
	if nodes := s.nodes(t); len(nodes) != 0 {
		t.Fatalf("the early pass launched %d nodes, want none: the node has room for another such pod", len(nodes))
	}
}
