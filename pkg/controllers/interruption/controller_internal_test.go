package interruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func karpenterNode(name, instanceID string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{
			v1alpha5.ProvisionerNameLabelKey: "default",
			corev1.LabelInstanceTypeStable:   "m5.large",
			corev1.LabelTopologyZone:         "us-west-2a",
			v1alpha5.CapacityTypeLabelKey:    "spot",
		}, Finalizers: []string{v1alpha5.TerminationFinalizer}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/" + instanceID},
	}
}

// deleted is nil once the node is deleted: gone, or held by its termination finalizer.
func deleted(c client.Client, node *corev1.Node) error {
	stored := &corev1.Node{}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(node), stored)
	if apierrors.IsNotFound(err) || err == nil && stored.DeletionTimestamp != nil {
		return nil
	}
	return fmt.Errorf("node %s: deletion %v; want it deleted (%w)", node.Name, stored.DeletionTimestamp, err)
}

// value reads a counter.
func value(counter prometheus.Counter) float64 {
	m := &dto.Metric{}
	if err := counter.Write(m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func TestDecide(t *testing.T) {
	karpenters := karpenterNode("n", "i-1")
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "asg-node"}}
	// Finding 34.7: deleted, a node without its termination finalizer would go without a drain.
	unfinalized := karpenterNode("unfinalized", "i-2")
	unfinalized.Finalizers = nil
	deleted := karpenterNode("deleted", "i-3")
	deleted.Finalizers, deleted.DeletionTimestamp = nil, &metav1.Time{Time: now}
	for _, tc := range []struct {
		kind cloudprovider.InterruptionKind
		node *corev1.Node
		want Action
	}{
		{cloudprovider.InterruptionSpot, karpenters, ActionDeleteNode},
		{cloudprovider.InterruptionScheduledChange, karpenters, ActionDeleteNode},
		{cloudprovider.InterruptionStateChange, karpenters, ActionDeleteNode},
		{cloudprovider.InterruptionRebalance, karpenters, ActionEvent},
		{cloudprovider.InterruptionUnknown, karpenters, ActionDiscard},
		{cloudprovider.InterruptionUnknown, nil, ActionDiscard},
		{cloudprovider.InterruptionSpot, nil, ActionIgnore},
		{cloudprovider.InterruptionRebalance, nil, ActionIgnore},
		{cloudprovider.InterruptionSpot, foreign, ActionIgnore},
		{cloudprovider.InterruptionStateChange, foreign, ActionIgnore},
		{cloudprovider.InterruptionSpot, unfinalized, ActionWait},
		{cloudprovider.InterruptionRebalance, unfinalized, ActionEvent},
		{cloudprovider.InterruptionSpot, deleted, ActionDeleteNode},
	} {
		name := "nil"
		if tc.node != nil {
			name = tc.node.Name
		}
		if got := Decide(tc.kind, tc.node); got != tc.want {
			t.Errorf("Decide(%s, %s) = %s, want %s", tc.kind, name, got, tc.want)
		}
	}
}

func TestDecideUnregistered(t *testing.T) {
	for kind, want := range map[cloudprovider.InterruptionKind]Action{
		cloudprovider.InterruptionSpot:            ActionDeleteNodeClaim,
		cloudprovider.InterruptionScheduledChange: ActionDeleteNodeClaim,
		cloudprovider.InterruptionStateChange:     ActionDeleteNodeClaim,
		cloudprovider.InterruptionRebalance:       ActionIgnore,
		cloudprovider.InterruptionUnknown:         ActionDiscard,
	} {
		if got := DecideUnregistered(kind); got != want {
			t.Errorf("DecideUnregistered(%s) = %s, want %s", kind, got, want)
		}
	}
}

func TestUnavailableOffering(t *testing.T) {
	unlabelled := karpenterNode("n", "i-1")
	delete(unlabelled.Labels, corev1.LabelTopologyZone)
	want := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}
	for _, tc := range []struct {
		name string
		kind cloudprovider.InterruptionKind
		node *corev1.Node
		ok   bool
	}{
		{"a spot interruption", cloudprovider.InterruptionSpot, karpenterNode("n", "i-1"), true},
		{"a node without the offering's labels", cloudprovider.InterruptionSpot, unlabelled, false},
		{"a scheduled change is about one machine", cloudprovider.InterruptionScheduledChange, karpenterNode("n", "i-1"), false},
		{"a stop may be anyone's", cloudprovider.InterruptionStateChange, karpenterNode("n", "i-1"), false},
	} {
		got, ok := UnavailableOffering(tc.kind, tc.node.Labels)
		if ok != tc.ok || (ok && got != want) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, ok, want, tc.ok)
		}
	}
}

type harness struct {
	controller *Controller
	client     client.Client
	queue      *fake.InterruptionQueue
	cloud      *fake.InstanceProvider
	recorder   *record.FakeRecorder
	clock      *clocktesting.FakeClock
}

func newHarness(t *testing.T, funcs interceptor.Funcs, objects ...client.Object) *harness {
	t.Helper()
	c := kubefake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(funcs).Build()
	return newHarnessReading(t, c, c)
}

// newHarnessReading builds the controller on a cache (c) and an API reader that may differ.
func newHarnessReading(t *testing.T, c client.Client, reader client.Reader) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(now)
	h := &harness{client: c, queue: fake.NewInterruptionQueue(), cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{Clock: clk}),
		recorder: record.NewFakeRecorder(100), clock: clk}
	controller, err := New(Options{Client: c, Reader: reader, Queue: h.queue, Instances: h.cloud, Recorder: h.recorder, Clock: clk, Grace: time.Minute, ReplaceFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	h.controller = controller
	return h
}

// handleAll receives what the queue holds and handles it.
func (h *harness) handleAll(t *testing.T) error {
	t.Helper()
	messages, err := h.queue.Receive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h.controller.HandleBatch(context.Background(), messages)
}

func (h *harness) events() []string {
	var events []string
	for len(h.recorder.Events) > 0 {
		events = append(events, <-h.recorder.Events)
	}
	return events
}

func TestHandleBatch(t *testing.T) {
	interrupted := karpenterNode("interrupted", "i-0000000000000000a")
	rebalanced := karpenterNode("rebalanced", "i-0000000000000000b")
	retired := karpenterNode("retired", "i-0000000000000000c")
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-0000000000000000d"}}
	h := newHarness(t, interceptor.Funcs{}, interrupted, rebalanced, retired, foreign)
	deleteNode := func() float64 {
		return value(actionsTotal.WithLabelValues(string(cloudprovider.InterruptionSpot), string(ActionDeleteNode)))
	}
	discarded := func() float64 {
		return value(actionsTotal.WithLabelValues(string(cloudprovider.InterruptionUnknown), string(ActionDiscard)))
	}
	received := func() float64 { return value(receivedTotal.WithLabelValues(string(cloudprovider.InterruptionSpot))) }
	deletedBefore, discardedBefore, receivedBefore := deleteNode(), discarded(), received()
	for _, m := range []cloudprovider.InterruptionMessage{
		{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{"i-0000000000000000a"}, Time: now},
		{Kind: cloudprovider.InterruptionRebalance, InstanceIDs: []string{"i-0000000000000000b"}, Time: now},
		{Kind: cloudprovider.InterruptionScheduledChange, InstanceIDs: []string{"i-0000000000000000c", "i-0000000000000000f"}, Time: now},
		{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{"i-0000000000000000d"}, Time: now},
		{Kind: cloudprovider.InterruptionUnknown, Err: errors.New("not an EventBridge event")},
	} {
		h.queue.Send(m)
	}
	if err := h.handleAll(t); err != nil {
		t.Fatal(err)
	}
	if h.queue.Len() != 0 {
		t.Errorf("%d messages left, want every one deleted", h.queue.Len())
	}
	for _, node := range []*corev1.Node{interrupted, retired} {
		if err := deleted(h.client, node); err != nil {
			t.Error(err)
		}
	}
	for _, node := range []*corev1.Node{rebalanced, foreign} {
		if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(node), &corev1.Node{}); err != nil {
			t.Errorf("node %s: %v, want it kept", node.Name, err)
		}
	}
	want := []cloudprovider.OfferingKey{{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}}
	if got := h.cloud.MarkUnavailableCalls(); !slices.Equal(got, want) {
		t.Errorf("offerings marked unavailable %v, want %v", got, want)
	}
	events := h.events()
	for _, wantEvent := range []string{
		"Warning SpotInterruption Spot interruption warning for instance i-0000000000000000a",
		"Normal RebalanceRecommendation Rebalance recommendation for instance i-0000000000000000b",
		"Warning ScheduledChange Scheduled maintenance for instance i-0000000000000000c",
	} {
		if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, wantEvent) }) {
			t.Errorf("events %q lack %q", events, wantEvent)
		}
	}
	if len(events) != 3 {
		t.Errorf("events %q, want 3", events)
	}
	if d := deleteNode() - deletedBefore; d != 1 {
		t.Errorf("spot DeleteNode actions went up by %v, want 1", d)
	}
	if d := discarded() - discardedBefore; d != 1 {
		t.Errorf("discarded messages went up by %v, want 1", d)
	}
	if d := received() - receivedBefore; d != 2 {
		t.Errorf("spot messages received went up by %v, want 2", d)
	}
}

// A message is deleted only once its action is taken: when acting fails, or deleting the
// message does, it comes back, and acting on it again is harmless.
func TestAtLeastOnce(t *testing.T) {
	node := karpenterNode("interrupted", "i-0000000000000000a")
	node.Finalizers = []string{v1alpha5.TerminationFinalizer}
	failDelete := true
	h := newHarness(t, interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if failDelete {
			return apierrors.NewServiceUnavailable("the API server is away")
		}
		return c.Delete(ctx, obj, opts...)
	}}, node)
	h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{"i-0000000000000000a"}, Time: now})

	if err := h.handleAll(t); err == nil || !strings.Contains(err.Error(), "the API server is away") {
		t.Fatalf("HandleBatch: %v, want the node's deletion error", err)
	}
	if h.queue.Len() != 1 {
		t.Fatal("the message was deleted although the node was not")
	}

	failDelete = false
	h.queue.SetError(errors.New("the queue is away"))
	if err := h.controller.HandleBatch(context.Background(), []cloudprovider.InterruptionMessage{{ID: "message-1", ReceiptHandle: "message-1",
		Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{"i-0000000000000000a"}, Time: now}}); err == nil {
		t.Fatal("HandleBatch succeeded although the message could not be deleted")
	}
	stored := &corev1.Node{}
	if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(node), stored); err != nil || stored.DeletionTimestamp == nil {
		t.Fatalf("node %v (%v), want it being deleted", stored.DeletionTimestamp, err)
	}

	// Delivered again, as after a crash: the node is already being deleted.
	h.queue.SetError(nil)
	h.queue.Redeliver()
	h.events()
	if err := h.handleAll(t); err != nil {
		t.Fatal(err)
	}
	if h.queue.Len() != 0 {
		t.Error("the message delivered again was not deleted")
	}
	if events := h.events(); len(events) != 0 {
		t.Errorf("events %q on delivery again, want none", events)
	}
}

// An interruption of an instance launched moments ago, whose Node the cache does not show yet,
// is not lost: the API server's Node is acted on; with no Node yet the message stays queued
// until one exists, or until the grace period says none will (garbage collection's part).
func TestInterruptionBeforeTheCacheShowsTheNode(t *testing.T) {
	launch := func(h *harness) *cloudprovider.Instance {
		t.Helper()
		instanceType := fake.DefaultInstanceTypes()[0]
		launched, err := h.cloud.Create(context.Background(), cloudprovider.LaunchRequest{ProvisionerName: "default",
			Candidates: []cloudprovider.Candidate{{InstanceType: instanceType, Offering: instanceType.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		return launched[0]
	}
	nodeOf := func(instance *cloudprovider.Instance) *corev1.Node {
		node := karpenterNode(instance.NodeName, instance.ID)
		node.Spec.ProviderID = instance.ProviderID
		return node
	}
	waits := func() float64 {
		return value(actionsTotal.WithLabelValues(string(cloudprovider.InterruptionSpot), string(ActionWait)))
	}

	t.Run("the API server shows the node the cache does not", func(t *testing.T) {
		apiServer := crfake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
		// The cache's client writes to the API server; its reads stay behind.
		empty := crfake.NewClientBuilder().WithScheme(apis.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
			Delete: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				return apiServer.Delete(ctx, obj, opts...)
			},
		}).Build()
		h := newHarnessReading(t, empty, apiServer)
		instance := launch(h)
		if err := apiServer.Create(context.Background(), nodeOf(instance)); err != nil {
			t.Fatal(err)
		}
		node := nodeOf(instance)
		h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{instance.ID}, Time: now})
		if err := h.handleAll(t); err != nil {
			t.Fatal(err)
		}
		if h.queue.Len() != 0 {
			t.Error("the message was kept, want it handled and deleted")
		}
		if err := deleted(apiServer, node); err != nil {
			t.Error(err)
		}
		if events := h.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Warning SpotInterruption") {
			t.Errorf("events %q, want the interruption's", events)
		}
	})

	t.Run("no node yet: kept within the grace, then dropped", func(t *testing.T) {
		h := newHarness(t, interceptor.Funcs{})
		instance := launch(h)
		h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{instance.ID}, Time: now})
		before := waits()
		if err := h.handleAll(t); err != nil {
			t.Fatal(err)
		}
		if h.queue.Len() != 1 {
			t.Fatal("the message was deleted, want it kept until the node exists")
		}
		if d := waits() - before; d != 1 {
			t.Errorf("Wait actions went up by %v, want 1", d)
		}

		// The Node is created; the message, delivered again, deletes it.
		node := nodeOf(instance)
		if err := h.client.Create(context.Background(), node); err != nil {
			t.Fatal(err)
		}
		h.queue.Redeliver()
		if err := h.handleAll(t); err != nil {
			t.Fatal(err)
		}
		if h.queue.Len() != 0 {
			t.Error("the message was kept once the node existed")
		}
		if err := deleted(h.client, node); err != nil {
			t.Error(err)
		}

		// An instance past the grace with no node is garbage collection's: the message goes.
		late := launch(h)
		h.clock.Step(time.Minute)
		h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{late.ID}, Time: now})
		if err := h.handleAll(t); err != nil {
			t.Fatal(err)
		}
		if h.queue.Len() != 0 {
			t.Error("the message about an instance past the grace was kept")
		}
	})

	// Found by a review against upstream, which finds interrupted instances by their NodeClaims:
	// the code before kept the message within the grace and then dropped it, the NodeClaim
	// left waiting for a node its instance would never register.
	t.Run("no node yet, a NodeClaim recorded the instance: it is deleted, within the grace or past it", func(t *testing.T) {
		for _, age := range []time.Duration{0, 10 * time.Minute} {
			h := newHarness(t, interceptor.Funcs{})
			instance := launch(h)
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-x", Labels: map[string]string{
				corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-west-2a", v1alpha5.CapacityTypeLabelKey: "spot"}},
				Status: v1.NodeClaimStatus{ProviderID: instance.ProviderID}}
			if err := h.client.Create(context.Background(), nc); err != nil {
				t.Fatal(err)
			}
			h.clock.Step(age)
			before := value(actionsTotal.WithLabelValues(string(cloudprovider.InterruptionSpot), string(ActionDeleteNodeClaim)))
			h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{instance.ID}, Time: now})
			if err := h.handleAll(t); err != nil {
				t.Fatal(err)
			}
			if h.queue.Len() != 0 {
				t.Errorf("%s after the launch: the message was kept, want it handled", age)
			}
			if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(nc), &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s after the launch: nodeclaim read %v, want it deleted", age, err)
			}
			if d := value(actionsTotal.WithLabelValues(string(cloudprovider.InterruptionSpot), string(ActionDeleteNodeClaim))) - before; d != 1 {
				t.Errorf("%s after the launch: DeleteNodeClaim actions went up by %v, want 1", age, d)
			}
			if marked := h.cloud.MarkUnavailableCalls(); len(marked) != 1 || marked[0] != (cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}) {
				t.Errorf("%s after the launch: offerings marked unavailable %v, want the NodeClaim's", age, marked)
			}
			if events := h.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Warning SpotInterruption") {
				t.Errorf("%s after the launch: events %q, want the interruption's", age, events)
			}
		}
	})

	t.Run("the cloud cannot say whether the instance is the cluster's: the message stays", func(t *testing.T) {
		h := newHarness(t, interceptor.Funcs{})
		h.cloud.SetError(errors.New("EC2 is away"))
		h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionSpot, InstanceIDs: []string{"i-0000000000000000e"}, Time: now})
		if err := h.handleAll(t); err == nil || !strings.Contains(err.Error(), "EC2 is away") {
			t.Fatalf("HandleBatch: %v, want the cloud's error", err)
		}
		if h.queue.Len() != 1 {
			t.Error("the message was deleted although the instance's owner is unknown")
		}
	})
}

// nodePoolNode is a NodePool's registered node on the instance, with its NodeClaim and NodePool.
func nodePoolNode(name, instanceID string) (*corev1.Node, *v1.NodeClaim, *v1.NodePool) {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-" + name, UID: types.UID("nc-" + name), Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Status: v1.NodeClaimStatus{NodeName: name, ProviderID: "aws:///us-west-2a/" + instanceID}}
	node := karpenterNode(name, instanceID)
	delete(node.Labels, v1alpha5.ProvisionerNameLabelKey)
	node.Labels[v1.NodePoolLabelKey] = "default"
	node.OwnerReferences = []metav1.OwnerReference{nodeclaims.OwnerReference(nc)}
	return node, nc, np
}

// TestAScheduledChangeFarAheadIsReplacedFirst: a scheduled change of a NodePool's node that starts
// more than a drain and a replacement ahead is recorded on its NodeClaim, for the disruption
// controller to replace the node first, and the node is kept; delivered again, it is recorded
// once. One that starts sooner, or of a Provisioner's node, drains the node at once.
func TestAScheduledChangeFarAheadIsReplacedFirst(t *testing.T) {
	far, farClaim, np := nodePoolNode("far", "i-0000000000000000a")
	near, nearClaim, _ := nodePoolNode("near", "i-0000000000000000b")
	provisioners := karpenterNode("provisioners", "i-0000000000000000c")
	h := newHarness(t, interceptor.Funcs{}, np, far, farClaim, near, nearClaim, provisioners)
	replaced := func() float64 {
		return value(actionsTotal.WithLabelValues(string(cloudprovider.InterruptionScheduledChange), string(ActionReplaceNode)))
	}
	before := replaced()
	inTwoWeeks := now.Add(14 * 24 * time.Hour)
	for range 2 {
		h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionScheduledChange, Time: now, Deadline: inTwoWeeks,
			InstanceIDs: []string{"i-0000000000000000a", "i-0000000000000000c"}})
		h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionScheduledChange, Time: now, Deadline: now.Add(20 * time.Minute),
			InstanceIDs: []string{"i-0000000000000000b"}})
		if err := h.handleAll(t); err != nil {
			t.Fatal(err)
		}
	}
	if h.queue.Len() != 0 {
		t.Errorf("%d messages left, want every one deleted", h.queue.Len())
	}
	stored := &corev1.Node{}
	if err := h.client.Get(t.Context(), client.ObjectKeyFromObject(far), stored); err != nil || stored.DeletionTimestamp != nil {
		t.Errorf("node far: %v, deletion %v; want it kept, to be replaced first", err, stored.DeletionTimestamp)
	}
	recorded := &v1.NodeClaim{}
	if err := h.client.Get(t.Context(), client.ObjectKeyFromObject(farClaim), recorded); err != nil {
		t.Fatal(err)
	}
	if in, ok, err := disruption.InterruptionOf(recorded); !ok || err != nil || in.Reason != "scheduled_change" || !in.Deadline.Equal(inTwoWeeks) {
		t.Errorf("interruption recorded %+v (%v, %v), want scheduled_change at %s", in, ok, err, inTwoWeeks)
	}
	for _, node := range []*corev1.Node{near, provisioners} {
		if err := deleted(h.client, node); err != nil {
			t.Error(err)
		}
	}
	if in, ok, _ := disruption.InterruptionOf(nearClaim); ok {
		t.Errorf("interruption %+v recorded on the near node's nodeclaim, want it drained at once", in)
	}
	if d := replaced() - before; d != 2 {
		t.Errorf("ReplaceNode actions went up by %v, want 2 (once per delivery)", d)
	}
	replacing := 0
	for _, e := range h.events() {
		if strings.Contains(e, "replacing the node first") {
			replacing++
		}
	}
	if replacing != 2 {
		t.Errorf("%d Events say the node is replaced first, want 2 (its NodeClaim and node, once)", replacing)
	}
}

// TestWithoutTheDisruptionControllerAScheduledChangeDrainsAtOnce: where no disruption controller
// runs to replace it, a NodePool's node whose scheduled change starts weeks ahead is drained at
// once, as before: recorded on its NodeClaim, it would wait for a replacement nothing launches.
func TestWithoutTheDisruptionControllerAScheduledChangeDrainsAtOnce(t *testing.T) {
	node, nc, np := nodePoolNode("far", "i-0000000000000000a")
	h := newHarness(t, interceptor.Funcs{}, np, node, nc)
	h.controller.replaceFirstEnabled = false
	h.queue.Send(cloudprovider.InterruptionMessage{Kind: cloudprovider.InterruptionScheduledChange, Time: now, Deadline: now.Add(14 * 24 * time.Hour),
		InstanceIDs: []string{"i-0000000000000000a"}})
	if err := h.handleAll(t); err != nil {
		t.Fatal(err)
	}
	if err := deleted(h.client, node); err != nil {
		t.Error(err)
	}
}
