package producers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	cloudfake "karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
	exported "karpenter.sh/karpenter/pkg/test/gauges"
)

func readyNode(name string, labels map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	return builders.Node(builders.NodeOptions{Name: name, Labels: labels, Allocatable: allocatable, Ready: corev1.ConditionTrue})
}

// pod runs on nodeName or, without one, is pending and unschedulable.
func pod(name, nodeName string, requests corev1.ResourceList) *corev1.Pod {
	if nodeName == "" {
		return builders.Pod(builders.PodOptions{Name: name, Requests: requests, Unschedulable: true})
	}
	return builders.Pod(builders.PodOptions{Name: name, NodeName: nodeName, Requests: requests, Phase: corev1.PodRunning})
}

func newReader(objects ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objects...).
		WithIndex(&corev1.Pod{}, pods.NodeNameField, pods.NodeNameOf).
		Build()
}

func producer(name string, spec v1alpha1.MetricsProducerSpec) *v1alpha1.MetricsProducer {
	return &v1alpha1.MetricsProducer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}
}

func sampleValue(t *testing.T, samples []Sample, gauge *prometheus.GaugeVec) float64 {
	t.Helper()
	for _, s := range samples {
		if s.Gauge == gauge {
			return s.Value
		}
	}
	t.Fatalf("no sample for the gauge")
	return 0
}

func TestReservedCapacityProducer(t *testing.T) {
	group := map[string]string{"group": "a"}
	reader := newReader(
		readyNode("a1", group, builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10")),
		readyNode("a2", group, builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10")),
		readyNode("b1", map[string]string{"group": "b"}, builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10")),
		pod("p1", "a1", builders.Resources("cpu", "6", "memory", "4Gi")),
		pod("p2", "a2", builders.Resources("cpu", "4", "memory", "4Gi")),
		pod("elsewhere", "b1", builders.Resources("cpu", "8")),
		pod("pending", "", builders.Resources("cpu", "8")),
	)
	mp := producer("reserved", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}})
	result, err := (&ReservedCapacityProducer{Reader: reader}).Produce(context.Background(), mp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[corev1.ResourceName]string{"cpu": "62.50%, 10/16", "memory": "25.00%, 8Gi/32Gi", "pods": "10.00%, 2/20"}
	for name, text := range want {
		if got := result.Status[name]; got != text {
			t.Errorf("status %s = %q, want %q", name, got, text)
		}
	}
	for gauge, value := range map[*prometheus.GaugeVec]float64{
		ReservedCapacity["cpu"].Reserved: 10, ReservedCapacity["cpu"].Capacity: 16, ReservedCapacity["cpu"].Utilization: 0.625,
		ReservedCapacity["memory"].Reserved: 8 << 30, ReservedCapacity["memory"].Capacity: 32 << 30, ReservedCapacity["memory"].Utilization: 0.25,
		ReservedCapacity["pods"].Reserved: 2, ReservedCapacity["pods"].Capacity: 20, ReservedCapacity["pods"].Utilization: 0.1,
	} {
		if got := sampleValue(t, result.Samples, gauge); got != value {
			t.Errorf("sample = %v, want %v", got, value)
		}
	}

	empty := producer("empty", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: map[string]string{"group": "none"}}})
	_, err = (&ReservedCapacityProducer{Reader: reader}).Produce(context.Background(), empty)
	if ReasonOf(err) != ReasonNoCapacity {
		t.Errorf("a group without nodes: error %v, want reason %s", err, ReasonNoCapacity)
	}
}

func TestPendingCapacityProducer(t *testing.T) {
	group := map[string]string{"group": "a"}
	daemon := pod("agent", "a1", builders.Resources("cpu", "1"))
	daemon.OwnerReferences = []metav1.OwnerReference{builders.DaemonSetOwner("agent")}
	pending := func() []client.Object {
		var out []client.Object
		for _, name := range []string{"w1", "w2", "w3", "w4", "w5"} {
			out = append(out, pod(name, "", builders.Resources("cpu", "1")))
		}
		return out
	}
	template := &v1alpha1.NodeTemplate{Allocatable: builders.Resources("cpu", "2", "pods", "110")}
	for _, tc := range []struct {
		name       string
		objects    []client.Object
		template   *v1alpha1.NodeTemplate
		pods, want int32
		reason     string
	}{
		{name: "nothing pending needs no shape", want: 0},
		{
			name: "shape from the group's node, less its DaemonSet pods",
			// 4 cpu less the 1-cpu agent leaves 3: five 1-cpu pods need 2 nodes.
			objects: append(pending(), readyNode("a1", group, builders.Resources("cpu", "4", "pods", "110")), daemon),
			pods:    5, want: 2,
		},
		{name: "template when the group has no nodes", objects: pending(), template: template, pods: 5, want: 3},
		{name: "no nodes and no template", objects: pending(), reason: ReasonNoNodeShape},
		{
			name:     "existing nodes take precedence over the template",
			objects:  append(pending(), readyNode("a1", group, builders.Resources("cpu", "8", "pods", "110"))),
			template: template, pods: 5, want: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp := producer("pending", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: group, NodeTemplate: tc.template}})
			result, err := (&PendingCapacityProducer{Reader: newReader(tc.objects...)}).Produce(context.Background(), mp)
			if tc.reason != "" {
				if ReasonOf(err) != tc.reason {
					t.Fatalf("error %v, want reason %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := result.Status; got == nil || got.Pods != tc.pods || got.Nodes != tc.want {
				t.Errorf("status = %+v, want %d pods, %d nodes", got, tc.pods, tc.want)
			}
			if got := sampleValue(t, result.Samples, PendingCapacityNodes); got != float64(tc.want) {
				t.Errorf("sample = %v, want %d", got, tc.want)
			}
		})
	}
}

func TestPendingCapacityTemplateLabelsAndTaints(t *testing.T) {
	spec := &v1alpha1.PendingCapacitySpec{
		NodeSelector: map[string]string{"group": "gpu"},
		NodeTemplate: &v1alpha1.NodeTemplate{
			Labels:      map[string]string{"zone": "a"},
			Taints:      []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}},
			Allocatable: builders.Resources("cpu", "4", "pods", "110"),
		},
	}
	selecting := pod("selecting", "", builders.Resources("cpu", "1"))
	selecting.Spec.NodeSelector = map[string]string{"group": "gpu", "zone": "a"}
	selecting.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	untolerating := pod("untolerating", "", builders.Resources("cpu", "1"))
	mp := producer("pending", v1alpha1.MetricsProducerSpec{PendingCapacity: spec})
	result, err := (&PendingCapacityProducer{Reader: newReader(selecting, untolerating)}).Produce(context.Background(), mp)
	if err != nil {
		t.Fatal(err)
	}
	if got := *result.Status; got.Pods != 1 || got.Nodes != 1 {
		t.Errorf("status = %+v, want the selecting, tolerating pod only", got)
	}
}

func TestQueueProducer(t *testing.T) {
	clouds := cloudfake.NewFactory()
	queue := clouds.AddQueue(string(v1alpha1.AWSSQSQueueType), "q", cloudfake.NewQueue(42, 90*time.Second))
	mp := producer("queue", v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "q"}})
	p := NewQueueProducer(clouds)

	result, err := p.Produce(context.Background(), mp)
	if err != nil {
		t.Fatal(err)
	}
	if got := result.Status; got.Length != 42 || ptr.Deref(got.OldestMessageAgeSeconds, -1) != 90 {
		t.Errorf("status = %+v", got)
	}
	if sampleValue(t, result.Samples, QueueLength) != 42 || sampleValue(t, result.Samples, QueueOldestMessageAgeSeconds) != 90 {
		t.Errorf("samples = %+v", result.Samples)
	}

	queue.Set(3, 0)
	queue.SetNoData()
	result, err = p.Produce(context.Background(), mp)
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Samples) != 1 || result.Status.OldestMessageAgeSeconds != nil {
		t.Errorf("messages without an age datapoint: samples %+v, status %+v; want the length only", result.Samples, result.Status)
	}

	queue.SetError(&cloudprovider.AccessDeniedError{Action: "sqs:GetQueueAttributes", Resource: "q", Err: errors.New("denied")})
	if _, err = p.Produce(context.Background(), mp); ReasonOf(err) != ReasonQueueUnreadable || !strings.Contains(err.Error(), "sqs:GetQueueAttributes") {
		t.Errorf("error = %v, want %s naming the action", err, ReasonQueueUnreadable)
	}

	missing := producer("missing", v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "nope"}})
	if _, err = p.Produce(context.Background(), missing); ReasonOf(err) != ReasonQueueUnreadable {
		t.Errorf("error = %v, want %s", err, ReasonQueueUnreadable)
	}
	if _, err = NewQueueProducer(nil).Produce(context.Background(), mp); err == nil || !strings.Contains(err.Error(), "no cloud provider") {
		t.Errorf("error = %v, want one saying no cloud provider is configured", err)
	}
}

func TestQueueProducerKeepsTheLengthWhenTheAgeFails(t *testing.T) {
	clouds := cloudfake.NewFactory()
	queue := clouds.AddQueue(string(v1alpha1.AWSSQSQueueType), "q", cloudfake.NewQueue(12, time.Minute))
	queue.SetOldestMessageAgeError(&cloudprovider.AccessDeniedError{Action: "cloudwatch:GetMetricData", Resource: "q", Err: errors.New("denied")})
	mp := producer("queue", v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "q"}})
	p := NewQueueProducer(clouds)
	result, err := p.Produce(context.Background(), mp)
	if err != nil {
		t.Fatalf("error = %v, want the length produced", err)
	}
	if len(result.Samples) != 1 || sampleValue(t, result.Samples, QueueLength) != 12 {
		t.Errorf("samples = %+v, want the length alone", result.Samples)
	}
	if result.Status.Length != 12 || result.Status.OldestMessageAgeSeconds != nil {
		t.Errorf("status = %+v, want the length and no age", result.Status)
	}
	if result.Partial == nil || result.Partial.Reason != ReasonOldestMessageAgeUnavailable ||
		!strings.Contains(result.Partial.Error(), "cloudwatch:GetMetricData") {
		t.Errorf("partial = %v, want %s naming the refused action", result.Partial, ReasonOldestMessageAgeUnavailable)
	}
}

func TestScheduleProducer(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, time.March, 6, 16, 30, 0, 0, time.UTC)) // a Friday
	spec := &v1alpha1.ScheduleSpec{
		Timezone:        ptr.To("America/Los_Angeles"),
		DefaultReplicas: 1,
		Behaviors: []v1alpha1.ScheduledBehavior{{
			Replicas: 5,
			Start:    &v1alpha1.Pattern{Weekdays: ptr.To("Mon-Fri"), Hours: ptr.To("9")},
			End:      &v1alpha1.Pattern{Weekdays: ptr.To("Mon-Fri"), Hours: ptr.To("17")},
		}},
	}
	mp := producer("schedule", v1alpha1.MetricsProducerSpec{ScheduleSpec: spec})
	result, err := (&ScheduleProducer{Clock: clk}).Produce(context.Background(), mp)
	if err != nil {
		t.Fatal(err)
	}
	// 16:30 UTC is 8:30 PST: the value is 1 until 9:00 PST (17:00 UTC), then 5.
	status := result.Status
	wantNext := time.Date(2026, time.March, 6, 17, 0, 0, 0, time.UTC)
	if *status.CurrentValue != 1 || *status.NextValue != 5 || !status.NextValueTime.Time.Equal(wantNext) || !result.NextChange.Equal(wantNext) {
		t.Errorf("status = {current %d, next %d at %v}, NextChange %v", *status.CurrentValue, *status.NextValue, status.NextValueTime, result.NextChange)
	}
	if sampleValue(t, result.Samples, ScheduledReplicasValue) != 1 {
		t.Errorf("samples = %+v", result.Samples)
	}

	spec.Behaviors[0].Start.Weekdays = ptr.To("Mun")
	_, err = (&ScheduleProducer{Clock: clk}).Produce(context.Background(), mp)
	if ReasonOf(err) != ReasonInvalidSchedule || !strings.Contains(err.Error(), `spec.scheduleSpec.behaviors[0].start.weekdays: "Mun"`) {
		t.Errorf("error = %v, want %s naming the field and value", err, ReasonInvalidSchedule)
	}
}

func TestExportReplacesEverySeriesOfAProducer(t *testing.T) {
	key := types.NamespacedName{Namespace: "test-export", Name: "p"}
	other := types.NamespacedName{Namespace: "test-export", Name: "other"}
	Export(other, []Sample{{Gauge: QueueLength, Value: 7}})
	Export(key, []Sample{{Gauge: QueueLength, Value: 1}, {Gauge: QueueOldestMessageAgeSeconds, Value: 2}})
	if got, ok := exported.Value(t, "karpenter_queue_oldest_message_age_seconds", key); !ok || got != 2 {
		t.Errorf("oldest message age = %v, %v; want 2", got, ok)
	}
	Export(key, []Sample{{Gauge: ScheduledReplicasValue, Value: 3}})
	if got, ok := exported.Value(t, "karpenter_scheduled_replicas_value", key); !ok || got != 3 {
		t.Errorf("scheduled replicas = %v, %v; want 3", got, ok)
	}
	for _, metric := range []string{"karpenter_queue_length", "karpenter_queue_oldest_message_age_seconds"} {
		if _, ok := exported.Value(t, metric, key); ok {
			t.Errorf("%s is still exported after an export without it", metric)
		}
	}
	Delete(key)
	if _, ok := exported.Value(t, "karpenter_scheduled_replicas_value", key); ok {
		t.Error("Delete left a series")
	}
	if got, ok := exported.Value(t, "karpenter_queue_length", other); !ok || got != 7 {
		t.Errorf("another producer's series changed: %v, %v", got, ok)
	}
}

func TestGaugeNames(t *testing.T) {
	key := types.NamespacedName{Namespace: "test-names", Name: "p"}
	var samples []Sample
	for _, g := range gauges {
		samples = append(samples, Sample{Gauge: g, Value: 1})
	}
	Export(key, samples)
	defer Delete(key)
	for _, name := range []string{
		"karpenter_reserved_capacity_cpu_reserved", "karpenter_reserved_capacity_cpu_capacity", "karpenter_reserved_capacity_cpu_utilization",
		"karpenter_reserved_capacity_memory_reserved", "karpenter_reserved_capacity_memory_capacity", "karpenter_reserved_capacity_memory_utilization",
		"karpenter_reserved_capacity_pods_reserved", "karpenter_reserved_capacity_pods_capacity", "karpenter_reserved_capacity_pods_utilization",
		"karpenter_pending_capacity_nodes", "karpenter_queue_length", "karpenter_queue_oldest_message_age_seconds", "karpenter_scheduled_replicas_value",
	} {
		if _, ok := exported.Value(t, name, key); !ok {
			t.Errorf("%s is not exported", name)
		}
	}
	if len(gauges) != 13 {
		t.Errorf("%d gauges, want the 13 of the contract", len(gauges))
	}
}
