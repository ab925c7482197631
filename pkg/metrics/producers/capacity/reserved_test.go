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

func TestSumOfEachNodeIsReserveOfTheGroup(t *testing.T) {
	cordoned := node("cordoned", true, builders.Resources("cpu", "8", "memory", "8Gi", "pods", "10"))
	cordoned.Spec.Unschedulable = true
	a := node("a", true, builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10"))
	b := node("b", true, builders.Resources("cpu", "3500m", "memory", "16G", "pods", "110"))
	notReady := node("not-ready", false, builders.Resources("cpu", "8", "memory", "8Gi", "pods", "10"))
	pods := []corev1.Pod{
		boundPod("web-1", "a", corev1.PodRunning, builders.Requesting("cpu", "4", "memory", "4Gi")),
		boundPod("milli", "a", corev1.PodRunning, builders.Requesting("cpu", "250m", "memory", "100M")),
		boundPod("web-2", "b", corev1.PodRunning, builders.Requesting("cpu", "4", "memory", "4Gi")),
		boundPod("no-requests", "b", corev1.PodRunning, corev1.Container{}),
		boundPod("done", "a", corev1.PodSucceeded, builders.Requesting("cpu", "8")),
		boundPod("on-not-ready", "not-ready", corev1.PodRunning, builders.Requesting("cpu", "8")),
		boundPod("on-cordoned", "cordoned", corev1.PodRunning, builders.Requesting("cpu", "8")),
	}
	for _, tc := range []struct {
		name  string
		group []corev1.Node
	}{
		{"no node", nil},
		{"one node", []corev1.Node{a}},
		{"two nodes of different units", []corev1.Node{a, b}},
		{"the other order", []corev1.Node{b, a}},
		{"nodes that take no pods count nothing", []corev1.Node{notReady, a, cordoned}},
		{"only nodes that take no pods", []corev1.Node{notReady, cordoned}},
		{"a node without pods first", []corev1.Node{node("empty", true, builders.Resources("cpu", "1")), b, a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []map[corev1.ResourceName]Reservation
			for i := range tc.group {
				parts = append(parts, Reserve(tc.group[i:i+1], pods))
			}
			want, got := Reserve(tc.group, pods), Sum(parts...)
			for _, name := range ReservedResources {
				g, w := got[name], want[name]
				if g.String() != w.String() || g.Reserved.Cmp(w.Reserved) != 0 || g.Capacity.Cmp(w.Capacity) != 0 {
					t.Errorf("%s: sum of the nodes %s, reserve of the group %s", name, g.String(), w.String())
				}
			}
		})
	}
}
