package metricsproducer_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/metricsproducer"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestReservedCapacityFollowsNodeAndPodEvents runs the controller on a real API server with a
// period longer than the test, so that only the node and pod events recompute the producers:
// each change must be in the value computed right after its event, never a value the producers'
// cache kept from before.
func TestReservedCapacityFollowsNodeAndPodEvents(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme}})
	ctx := t.Context()
	const eventsNamespace = "events"
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:               []string{metricsproducer.Name},
		MetricsProducerPeriod: time.Hour,
	}})
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: eventsNamespace}}); err != nil {
		t.Fatal(err)
	}
	group := map[string]string{"group": "events"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "events-1", Labels: group}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{
		Allocatable: builders.Resources("cpu", "4", "memory", "8Gi", "pods", "10"),
		Capacity:    builders.Resources("cpu", "4", "memory", "8Gi", "pods", "10"),
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Pods bound to the node by name; no kubelet runs them, and Pending pods reserve too.
	bound := func(name, cpu string) *corev1.Pod {
		pod := builders.Pod(builders.PodOptions{Name: name, Namespace: eventsNamespace, NodeName: node.Name, Requests: builders.Resources("cpu", cpu)})
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	first := bound("first", "1")
	mp := &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: "reserved", Namespace: eventsNamespace},
		Spec:       v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}},
	}
	if err := env.Client.Create(ctx, mp); err != nil {
		t.Fatal(err)
	}
	cpuIs := func(want string) {
		t.Helper()
		eventually.Holds(t, "reserved cpu "+want, func() (bool, string, error) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mp), mp); err != nil {
				return false, "", err
			}
			calculable := mp.StatusConditions().GetCondition(v1alpha1.Calculable)
			return mp.Status.ReservedCapacity[corev1.ResourceCPU] == want && calculable.IsTrue(),
				fmt.Sprintf("cpu %q, calculable %+v", mp.Status.ReservedCapacity[corev1.ResourceCPU], calculable), nil
		}, eventually.Timeout(pollTimeout))
	}
	cpuIs("25.00%, 1/4")

	bound("second", "2")
	cpuIs("75.00%, 3/4")

	// No kubelet confirms a graceful deletion: the pod goes at once.
	if err := env.Client.Delete(ctx, first, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cpuIs("50.00%, 2/4")

	node.Status.Allocatable = builders.Resources("cpu", "8", "memory", "8Gi", "pods", "10")
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	cpuIs("25.00%, 2/8")

	node.Spec.Unschedulable = true
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "a cordoned group has no capacity", func() (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mp), mp); err != nil {
			return false, "", err
		}
		calculable := mp.StatusConditions().GetCondition(v1alpha1.Calculable)
		return calculable.IsFalse() && calculable.Reason == producers.ReasonNoCapacity, fmt.Sprintf("calculable %+v", calculable), nil
	}, eventually.Timeout(pollTimeout))
}
