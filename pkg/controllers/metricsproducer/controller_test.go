package metricsproducer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	cloudfake "karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/gauges"
)

type fixture struct {
	client     client.Client
	controller *Controller
	recorder   *record.FakeRecorder
	clock      *clocktesting.FakeClock
}

func newFixture(t *testing.T, objects ...client.Object) *fixture {
	t.Helper()
	kubeClient := fake.NewClientBuilder().WithScheme(apis.NewScheme()).
		WithStatusSubresource(&v1alpha1.MetricsProducer{}).
		WithIndex(&corev1.Pod{}, pods.NodeNameField, pods.NodeNameOf).
		WithObjects(objects...).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, time.March, 6, 8, 59, 55, 0, time.UTC))
	recorder := record.NewFakeRecorder(16)
	controller, err := New(Options{Client: kubeClient, Kinds: producers.NewKinds(kubeClient, nil, clk), Recorder: recorder, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{client: kubeClient, controller: controller, recorder: recorder, clock: clk}
}

func (f *fixture) reconcile(t *testing.T, key types.NamespacedName) (reconcile.Result, *v1alpha1.MetricsProducer) {
	t.Helper()
	result, err := f.controller.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	mp := &v1alpha1.MetricsProducer{}
	if err := f.client.Get(context.Background(), key, mp); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	return result, mp
}

func (f *fixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

func readyNode(name string, labels map[string]string, cpu string) *corev1.Node {
	return builders.Node(builders.NodeOptions{
		Name: name, Labels: labels, Ready: corev1.ConditionTrue,
		Allocatable: builders.Resources("cpu", cpu, "memory", "8Gi", "pods", "10"),
	})
}

func condition(mp *v1alpha1.MetricsProducer, conditionType string) (corev1.ConditionStatus, string) {
	for _, c := range mp.Status.Conditions {
		if string(c.Type) == conditionType {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

func TestFailureKeepsStatusWithdrawsGaugesAndRecovers(t *testing.T) {
	group := map[string]string{"group": "a"}
	node := readyNode("a1", group, "4")
	mp := &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: "reserved", Namespace: "unit-failure"},
		Spec:       v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}},
	}
	f := newFixture(t, node, mp)
	key := client.ObjectKeyFromObject(mp)

	result, got := f.reconcile(t, key)
	if result.RequeueAfter != DefaultPeriod {
		t.Errorf("RequeueAfter = %v, want the default period", result.RequeueAfter)
	}
	if status, _ := condition(got, "Ready"); status != corev1.ConditionTrue {
		t.Fatalf("Ready = %q, want True; conditions %+v", status, got.Status.Conditions)
	}
	if got.Status.ReservedCapacity[corev1.ResourceCPU] != "0.00%, 0/4" {
		t.Errorf("status = %v", got.Status.ReservedCapacity)
	}
	if value, ok := gauges.Value(t, "karpenter_reserved_capacity_cpu_capacity", key); !ok || value != 4 {
		t.Errorf("cpu capacity gauge = %v, %v; want 4", value, ok)
	}

	// The group's only node goes away: no capacity.
	if err := f.client.Delete(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	result, got = f.reconcile(t, key)
	if status, reason := condition(got, "Ready"); status != corev1.ConditionFalse || reason != producers.ReasonNoCapacity {
		t.Errorf("Ready = %q %q, want False %s", status, reason, producers.ReasonNoCapacity)
	}
	if got.Status.ReservedCapacity[corev1.ResourceCPU] != "0.00%, 0/4" {
		t.Errorf("status after a failure = %v, want the last good one", got.Status.ReservedCapacity)
	}
	if _, ok := gauges.Value(t, "karpenter_reserved_capacity_cpu_utilization", key); ok {
		t.Error("the utilization gauge is still exported after a failure")
	}
	if result.RequeueAfter != DefaultPeriod {
		t.Errorf("RequeueAfter = %v after a failure, want the period", result.RequeueAfter)
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Warning NoCapacity") {
		t.Errorf("events = %q, want one NoCapacity warning", events)
	}
	f.reconcile(t, key)
	if events := f.events(); len(events) != 0 {
		t.Errorf("a persisting failure emitted %q again", events)
	}

	if err := f.client.Create(context.Background(), readyNode("a2", group, "8")); err != nil {
		t.Fatal(err)
	}
	_, got = f.reconcile(t, key)
	if status, _ := condition(got, "Ready"); status != corev1.ConditionTrue {
		t.Errorf("Ready = %q after recovery", status)
	}
	if value, ok := gauges.Value(t, "karpenter_reserved_capacity_cpu_capacity", key); !ok || value != 8 {
		t.Errorf("cpu capacity gauge = %v, %v; want 8", value, ok)
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Normal "+ReasonCalculated) {
		t.Errorf("events = %q, want one recovery event", events)
	}

	// Deleting the producer withdraws its series.
	if err := f.client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, key)
	if _, ok := gauges.Value(t, "karpenter_reserved_capacity_cpu_capacity", key); ok {
		t.Error("a deleted producer's series is still exported")
	}
}

func TestScheduleRequeuesAtTheNextChange(t *testing.T) {
	mp := &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: "schedule", Namespace: "unit-schedule"},
		Spec: v1alpha1.MetricsProducerSpec{ScheduleSpec: &v1alpha1.ScheduleSpec{
			DefaultReplicas: 1,
			Behaviors: []v1alpha1.ScheduledBehavior{{
				Replicas: 4,
				Start:    &v1alpha1.Pattern{Hours: ptr.To("9")},
				End:      &v1alpha1.Pattern{Hours: ptr.To("17")},
			}},
		}},
	}
	f := newFixture(t, mp)
	key := client.ObjectKeyFromObject(mp)
	result, got := f.reconcile(t, key)
	// 8:59:55: the value changes in 5s, sooner than the period.
	if result.RequeueAfter != 5*time.Second+time.Millisecond {
		t.Errorf("RequeueAfter = %v, want 5s and a millisecond", result.RequeueAfter)
	}
	if s := got.Status.ScheduledCapacity; *s.CurrentValue != 1 || *s.NextValue != 4 {
		t.Errorf("status = %+v", s)
	}
	f.clock.Step(result.RequeueAfter)
	result, got = f.reconcile(t, key)
	if s := got.Status.ScheduledCapacity; *s.CurrentValue != 4 || *s.NextValue != 1 {
		t.Errorf("status after the change = %+v", s)
	}
	if value, ok := gauges.Value(t, "karpenter_scheduled_replicas_value", key); !ok || value != 4 {
		t.Errorf("gauge = %v, %v; want 4", value, ok)
	}
	if result.RequeueAfter != DefaultPeriod {
		t.Errorf("RequeueAfter = %v, want the period", result.RequeueAfter)
	}
}

func TestKindChangeDropsTheOldKindsSeriesAndStatus(t *testing.T) {
	mp := &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: "switch", Namespace: "unit-switch"},
		Spec:       v1alpha1.MetricsProducerSpec{ScheduleSpec: &v1alpha1.ScheduleSpec{DefaultReplicas: 2}},
	}
	f := newFixture(t, mp, readyNode("n", map[string]string{"group": "b"}, "2"))
	key := client.ObjectKeyFromObject(mp)
	_, got := f.reconcile(t, key)
	got.Spec = v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: map[string]string{"group": "b"}}}
	if err := f.client.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	_, got = f.reconcile(t, key)
	if got.Status.ScheduledCapacity != nil || got.Status.ReservedCapacity == nil {
		t.Errorf("status = %+v, want the reserved capacity only", got.Status)
	}
	if _, ok := gauges.Value(t, "karpenter_scheduled_replicas_value", key); ok {
		t.Error("the schedule's series outlived the change of kind")
	}
}

func TestQueueWithoutCloudProviderIsNotReady(t *testing.T) {
	mp := &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: "queue", Namespace: "unit-queue"},
		Spec:       v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "https://sqs.us-west-2.amazonaws.com/123456789012/q"}},
	}
	f := newFixture(t, mp)
	_, got := f.reconcile(t, client.ObjectKeyFromObject(mp))
	if status, reason := condition(got, "Ready"); status != corev1.ConditionFalse || reason != producers.ReasonQueueUnreadable {
		t.Errorf("Ready = %q %q, want False %s", status, reason, producers.ReasonQueueUnreadable)
	}
}

func TestQueueAgeFailureKeepsTheLengthAndWithdrawsTheAge(t *testing.T) {
	mp := &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: "queue", Namespace: "unit-queue-age"},
		Spec:       v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "q"}},
	}
	f := newFixture(t, mp)
	clouds := cloudfake.NewFactory()
	queue := clouds.AddQueue(string(v1alpha1.AWSSQSQueueType), "q", cloudfake.NewQueue(5, time.Minute))
	f.controller.kinds = producers.NewKinds(f.client, clouds, f.clock)
	key := client.ObjectKeyFromObject(mp)

	f.reconcile(t, key)
	if value, ok := gauges.Value(t, "karpenter_queue_oldest_message_age_seconds", key); !ok || value != 60 {
		t.Fatalf("age gauge = %v, %v; want 60", value, ok)
	}

	queue.Set(9, 2*time.Minute)
	queue.SetOldestMessageAgeError(errors.New("calling cloudwatch:GetMetricData on sqs queue q, injected"))
	_, got := f.reconcile(t, key)
	if value, ok := gauges.Value(t, "karpenter_queue_length", key); !ok || value != 9 {
		t.Errorf("length gauge = %v, %v; want the fresh length 9", value, ok)
	}
	if value, ok := gauges.Value(t, "karpenter_queue_oldest_message_age_seconds", key); ok {
		t.Errorf("age gauge = %v, want it withdrawn, not left at the last good age", value)
	}
	if s := got.Status.Queue; s == nil || s.Length != 9 || s.OldestMessageAgeSeconds != nil {
		t.Errorf("queue status = %+v, want the length 9 and no age", s)
	}
	if status, reason := condition(got, "Calculable"); status != corev1.ConditionTrue || reason != producers.ReasonOldestMessageAgeUnavailable {
		t.Errorf("Calculable = %q %q, want True %s", status, reason, producers.ReasonOldestMessageAgeUnavailable)
	}
	if status, _ := condition(got, "Ready"); status != corev1.ConditionTrue {
		t.Errorf("Ready = %q, want True: the length is exported", status)
	}

	queue.SetOldestMessageAgeError(nil)
	_, got = f.reconcile(t, key)
	if value, ok := gauges.Value(t, "karpenter_queue_oldest_message_age_seconds", key); !ok || value != 120 {
		t.Errorf("age gauge after recovery = %v, %v; want 120", value, ok)
	}
	if status, reason := condition(got, "Calculable"); status != corev1.ConditionTrue || reason == producers.ReasonOldestMessageAgeUnavailable {
		t.Errorf("Calculable = %q %q after recovery, want True without the unavailable reason", status, reason)
	}

	// The length cannot be read either: nothing is exported, not even the last good length.
	queue.SetError(errors.New("calling sqs:GetQueueAttributes on sqs queue q, injected"))
	_, got = f.reconcile(t, key)
	for _, metric := range []string{"karpenter_queue_length", "karpenter_queue_oldest_message_age_seconds"} {
		if value, ok := gauges.Value(t, metric, key); ok {
			t.Errorf("%s = %v after a failed computation, want it withdrawn", metric, value)
		}
	}
	if status, reason := condition(got, "Calculable"); status != corev1.ConditionFalse || reason != producers.ReasonQueueUnreadable {
		t.Errorf("Calculable = %q %q, want False %s", status, reason, producers.ReasonQueueUnreadable)
	}
}

func TestNodeAndPodChangesEnqueueTheCapacityProducers(t *testing.T) {
	namespace := "unit-mapping"
	f := newFixture(t,
		&v1alpha1.MetricsProducer{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: namespace},
			Spec: v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: map[string]string{"group": "a"}}}},
		&v1alpha1.MetricsProducer{ObjectMeta: metav1.ObjectMeta{Name: "reserved", Namespace: namespace},
			Spec: v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: map[string]string{"group": "a"}}}},
		&v1alpha1.MetricsProducer{ObjectMeta: metav1.ObjectMeta{Name: "queue", Namespace: namespace},
			Spec: v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "q"}}},
		&v1alpha1.MetricsProducer{ObjectMeta: metav1.ObjectMeta{Name: "schedule", Namespace: namespace},
			Spec: v1alpha1.MetricsProducerSpec{ScheduleSpec: &v1alpha1.ScheduleSpec{DefaultReplicas: 1}}},
	)
	var got []string
	for _, request := range f.controller.capacityProducers(context.Background(), readyNode("n", nil, "1")) {
		got = append(got, request.Name)
	}
	if strings.Join(got, ",") != "pending,reserved" {
		t.Errorf("requests for %v, want pending and reserved", got)
	}
}
