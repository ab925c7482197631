package capacity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/test/builders"
)

func node(name string, ready bool, allocatable corev1.ResourceList) corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return *builders.Node(builders.NodeOptions{Name: name, Allocatable: allocatable, Ready: status})
}

func boundPod(name, nodeName string, phase corev1.PodPhase, containers ...corev1.Container) corev1.Pod {
	return *builders.Pod(builders.PodOptions{Name: name, NodeName: nodeName, Phase: phase, Containers: containers})
}

func TestReserve(t *testing.T) {
	cordoned := node("cordoned", true, builders.Resources("cpu", "8", "memory", "8Gi", "pods", "10"))
	cordoned.Spec.Unschedulable = true
	nodes := []corev1.Node{
		node("a", true, builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10")),
		node("b", true, builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10")),
		node("not-ready", false, builders.Resources("cpu", "8", "memory", "8Gi", "pods", "10")),
		cordoned,
	}
	pods := []corev1.Pod{
		boundPod("web-1", "a", corev1.PodRunning, builders.Requesting("cpu", "4", "memory", "4Gi")),
		boundPod("web-2", "b", corev1.PodRunning, builders.Requesting("cpu", "4", "memory", "4Gi")),
		boundPod("starting", "b", corev1.PodPending, builders.Requesting("cpu", "2")),
		boundPod("done", "a", corev1.PodSucceeded, builders.Requesting("cpu", "8")),
		boundPod("failed", "a", corev1.PodFailed, builders.Requesting("cpu", "8")),
		boundPod("on-not-ready", "not-ready", corev1.PodRunning, builders.Requesting("cpu", "8")),
		boundPod("on-cordoned", "cordoned", corev1.PodRunning, builders.Requesting("cpu", "8")),
		boundPod("elsewhere", "other-group", corev1.PodRunning, builders.Requesting("cpu", "8")),
	}
	got := Reserve(nodes, pods)
	for _, tc := range []struct {
		resource corev1.ResourceName
		want     string
		ratio    float64
	}{
		{corev1.ResourceCPU, "62.50%, 10/16", 0.625},
		{corev1.ResourceMemory, "25.00%, 8Gi/32Gi", 0.25},
		{corev1.ResourcePods, "15.00%, 3/20", 0.15},
	} {
		if s := got[tc.resource].String(); s != tc.want {
			t.Errorf("%s = %q, want %q", tc.resource, s, tc.want)
		}
		if ratio, ok := got[tc.resource].Utilization(); !ok || ratio != tc.ratio {
			t.Errorf("%s utilization = %v, %v, want %v", tc.resource, ratio, ok, tc.ratio)
		}
	}
}

func TestReserveWithoutCapacity(t *testing.T) {
	got := Reserve([]corev1.Node{node("not-ready", false, builders.Resources("cpu", "8"))}, nil)
	for _, name := range ReservedResources {
		if _, ok := got[name].Utilization(); ok {
			t.Errorf("%s utilization is defined without capacity", name)
		}
	}
	if s := got[corev1.ResourceCPU].String(); s != "no capacity, 0/0" {
		t.Errorf("cpu = %q", s)
	}
}
