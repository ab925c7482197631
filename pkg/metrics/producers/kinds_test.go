package producers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	cloudfake "karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// everyKindsStatus is a status in which every kind's field is set, as no producer leaves it.
func everyKindsStatus() v1alpha1.MetricsProducerStatus {
	return v1alpha1.MetricsProducerStatus{
		PendingCapacity:   &v1alpha1.PendingCapacityStatus{Pods: 9, Nodes: 9},
		ReservedCapacity:  map[corev1.ResourceName]string{"cpu": "old"},
		Queue:             &v1alpha1.QueueStatus{Length: 9},
		ScheduledCapacity: &v1alpha1.ScheduledCapacityStatus{CurrentValue: ptr.To[int32](9)},
		Conditions:        apis.Conditions{{Type: v1alpha1.Calculable, Status: corev1.ConditionFalse, Reason: "Before"}},
	}
}

func TestKindsProduceReadsOnlyAndWriteStatusSetsOneKind(t *testing.T) {
	group := map[string]string{"group": "a"}
	reader := newReader(readyNode("a1", group, builders.Resources("cpu", "4", "memory", "8Gi", "pods", "10")), pod("w", "", builders.Resources("cpu", "1")))
	clouds := cloudfake.NewFactory()
	clouds.AddQueue(string(v1alpha1.AWSSQSQueueType), "q", cloudfake.NewQueue(3, time.Second))
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, time.March, 6, 8, 0, 0, 0, time.UTC))
	k := NewKinds(reader, clouds, clk)
	for _, tc := range []struct {
		name string
		spec v1alpha1.MetricsProducerSpec
		// set is whether status holds the kind's field and no other.
		set func(v1alpha1.MetricsProducerStatus) bool
	}{{
		name: "pendingCapacity",
		spec: v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: group}},
		set: func(s v1alpha1.MetricsProducerStatus) bool {
			return s.PendingCapacity != nil && s.PendingCapacity.Pods == 1 && s.ReservedCapacity == nil && s.Queue == nil && s.ScheduledCapacity == nil
		},
	}, {
		name: "reservedCapacity",
		spec: v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}},
		set: func(s v1alpha1.MetricsProducerStatus) bool {
			return s.PendingCapacity == nil && s.ReservedCapacity["cpu"] == "0.00%, 0/4" && s.Queue == nil && s.ScheduledCapacity == nil
		},
	}, {
		name: "queue",
		spec: v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "q"}},
		set: func(s v1alpha1.MetricsProducerStatus) bool {
			return s.PendingCapacity == nil && s.ReservedCapacity == nil && s.Queue != nil && s.Queue.Length == 3 && s.ScheduledCapacity == nil
		},
	}, {
		name: "scheduleSpec",
		spec: v1alpha1.MetricsProducerSpec{ScheduleSpec: &v1alpha1.ScheduleSpec{DefaultReplicas: 2}},
		set: func(s v1alpha1.MetricsProducerStatus) bool {
			return s.PendingCapacity == nil && s.ReservedCapacity == nil && s.Queue == nil &&
				s.ScheduledCapacity != nil && ptr.Deref(s.ScheduledCapacity.CurrentValue, 0) == 2
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			mp := producer(tc.name, tc.spec)
			mp.Status = everyKindsStatus()
			read := mp.DeepCopy()
			result, err := k.Produce(context.Background(), mp)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(mp, read) {
				t.Errorf("Produce wrote the MetricsProducer: %+v, was %+v", mp, read)
			}
			if len(result.Samples) == 0 {
				t.Error("no samples")
			}
			status := everyKindsStatus()
			result.WriteStatus(&status)
			if !tc.set(status) {
				t.Errorf("status = %+v, want the %s field only", status, tc.name)
			}
			if !equality.Semantic.DeepEqual(status.Conditions, everyKindsStatus().Conditions) {
				t.Errorf("conditions = %+v, want them untouched", status.Conditions)
			}
		})
	}
}

func TestKindsUnknownKind(t *testing.T) {
	_, err := NewKinds(newReader(), nil, clocktesting.NewFakePassiveClock(time.Now())).Produce(context.Background(), producer("none", v1alpha1.MetricsProducerSpec{}))
	if ReasonOf(err) != ReasonUnknownKind || err.Error() != "spec sets none of pendingCapacity, reservedCapacity, queue or scheduleSpec" {
		t.Errorf("error = %v, want %s naming every kind's field", err, ReasonUnknownKind)
	}
}

func TestKindsForgetDropsTheResolvedQueue(t *testing.T) {
	clouds := cloudfake.NewFactory()
	clouds.AddQueue(string(v1alpha1.AWSSQSQueueType), "q", cloudfake.NewQueue(1, 0))
	k := NewKinds(newReader(), clouds, clocktesting.NewFakePassiveClock(time.Now()))
	mp := producer("queue", v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "q"}})
	length := func() float64 {
		t.Helper()
		result, err := k.Produce(context.Background(), mp)
		if err != nil {
			t.Fatal(err)
		}
		return sampleValue(t, result.Samples, QueueLength)
	}
	if got := length(); got != 1 {
		t.Fatalf("length = %v, want 1", got)
	}
	clouds.AddQueue(string(v1alpha1.AWSSQSQueueType), "q", cloudfake.NewQueue(2, 0))
	if got := length(); got != 1 {
		t.Errorf("length = %v, want 1 from the queue resolved before", got)
	}
	k.Forget(types.NamespacedName{Namespace: mp.Namespace, Name: mp.Name})
	if got := length(); got != 2 {
		t.Errorf("length = %v after Forget, want 2 from the queue resolved again", got)
	}
}

func TestReadsNodesAndPods(t *testing.T) {
	for _, tc := range []struct {
		spec v1alpha1.MetricsProducerSpec
		want bool
	}{
		{v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{}}, true},
		{v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{}}, true},
		{v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{}}, false},
		{v1alpha1.MetricsProducerSpec{ScheduleSpec: &v1alpha1.ScheduleSpec{}}, false},
		{v1alpha1.MetricsProducerSpec{}, false},
	} {
		if got := ReadsNodesAndPods(&tc.spec); got != tc.want {
			t.Errorf("ReadsNodesAndPods(%+v) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}
