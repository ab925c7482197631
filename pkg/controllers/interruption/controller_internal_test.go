package interruption

import (
	"context"
	"errors"
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
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func karpenterNode(name, instanceID string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{
			v1alpha5.ProvisionerNameLabelKey: "default",
			corev1.LabelInstanceTypeStable:   "m5.large",
			corev1.LabelTopologyZone:         "us-west-2a",
			v1alpha5.CapacityTypeLabelKey:    "spot",
		}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/" + instanceID},
	}
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
		got, ok := UnavailableOffering(tc.kind, tc.node)
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
}

func newHarness(t *testing.T, funcs interceptor.Funcs, objects ...client.Object) *harness {
	t.Helper()
	scheme := apis.NewScheme()
	c := crfake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithInterceptorFuncs(funcs).Build()
	h := &harness{client: c, queue: fake.NewInterruptionQueue(), cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{}), recorder: record.NewFakeRecorder(100)}
	controller, err := New(Options{Client: c, Queue: h.queue, Instances: h.cloud, Recorder: h.recorder, Clock: clocktesting.NewFakeClock(now)})
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
		if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
			t.Errorf("node %s: %v, want it deleted", node.Name, err)
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
