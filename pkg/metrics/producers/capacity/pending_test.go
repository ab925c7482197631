package capacity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/test/builders"
)

func pendingPod(name string, mutate func(*corev1.PodSpec), containers ...corev1.Container) *corev1.Pod {
	pod := builders.Pod(builders.PodOptions{Name: name, Containers: containers, Unschedulable: true})
	if mutate != nil {
		mutate(&pod.Spec)
	}
	return pod
}

func pendingPods(n int, prefix string, containers ...corev1.Container) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, pendingPod(prefix+string(rune('a'+i%26))+strings.Repeat("x", i/26), nil, containers...))
	}
	return pods
}

var shape = NodeShape{
	Labels:      map[string]string{"group": "gpu", "zone": "a", "generation": "5"},
	Taints:      []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}},
	Allocatable: builders.Resources("cpu", "4", "memory", "16Gi", "pods", "10", "nvidia.com/gpu", "1"),
}

var tolerateGPU = func(spec *corev1.PodSpec) {
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
}

// requireNode is tolerateGPU and a required node affinity of one term, so the affinity alone
// decides; pkg/scheduling tests the matching itself.
func requireNode(requirements ...corev1.NodeSelectorRequirement) func(*corev1.PodSpec) {
	return func(spec *corev1.PodSpec) {
		tolerateGPU(spec)
		spec.Affinity = builders.Pod(builders.PodOptions{NodeRequirements: requirements}).Spec.Affinity
	}
}

func TestFits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*corev1.PodSpec)
		request corev1.Container
		unfit   string // substring of the reason; empty when the pod fits
	}{
		{name: "tolerating pod with small requests", mutate: tolerateGPU, request: builders.Requesting("cpu", "1")},
		{name: "untolerated NoSchedule taint", request: builders.Requesting("cpu", "1"), unfit: "dedicated=gpu:NoSchedule"},
		{name: "wildcard toleration", mutate: func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, request: builders.Requesting("cpu", "1")},
		{name: "matching nodeSelector", mutate: func(s *corev1.PodSpec) { tolerateGPU(s); s.NodeSelector = map[string]string{"zone": "a"} }, request: builders.Requesting()},
		{name: "mismatched nodeSelector", mutate: func(s *corev1.PodSpec) { tolerateGPU(s); s.NodeSelector = map[string]string{"zone": "b"} }, request: builders.Requesting(), unfit: "nodeSelector zone=b"},
		{name: "too much cpu", mutate: tolerateGPU, request: builders.Requesting("cpu", "4500m"), unfit: "requests 4500m cpu, the node offers 4"},
		{name: "exactly the allocatable", mutate: tolerateGPU, request: builders.Requesting("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "1")},
		{name: "a resource the shape lacks", mutate: tolerateGPU, request: builders.Requesting("example.com/fpga", "1"), unfit: "example.com/fpga"},
		{name: "affinity In", mutate: requireNode(builders.In("zone", "b", "a")), request: builders.Requesting()},
		{name: "affinity In mismatch", mutate: requireNode(builders.In("zone", "b")), request: builders.Requesting(), unfit: "affinity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := shape.Fits(pendingPod("p", tc.mutate, tc.request))
			switch {
			case tc.unfit == "" && err != nil:
				t.Errorf("Fits = %v, want nil", err)
			case tc.unfit != "" && (err == nil || !strings.Contains(err.Error(), tc.unfit)):
				t.Errorf("Fits = %v, want an error containing %q", err, tc.unfit)
			}
		})
	}
}

func TestPack(t *testing.T) {
	plain := NodeShape{Labels: map[string]string{"group": "a"}, Allocatable: builders.Resources("cpu", "4", "memory", "8Gi", "pods", "5")}
	for _, tc := range []struct {
		name              string
		shape             NodeShape
		pods              []*corev1.Pod
		wantPods, wantNds int
		wantUnfit         int
	}{
		{name: "nothing pending", shape: plain},
		{name: "one small pod opens one node", shape: plain, pods: pendingPods(1, "p", builders.Requesting("cpu", "100m")), wantPods: 1, wantNds: 1},
		{name: "cpu bound: 10 pods of 1 cpu need 3 nodes of 4", shape: plain, pods: pendingPods(10, "p", builders.Requesting("cpu", "1")), wantPods: 10, wantNds: 3},
		{name: "memory bound", shape: plain, pods: pendingPods(5, "p", builders.Requesting("cpu", "100m", "memory", "3Gi")), wantPods: 5, wantNds: 3},
		{name: "pod count bound: 12 tiny pods, 5 per node", shape: plain, pods: pendingPods(12, "p", builders.Requesting("cpu", "10m")), wantPods: 12, wantNds: 3},
		{name: "requests nothing still takes a pod slot", shape: plain, pods: pendingPods(6, "p", builders.Requesting()), wantPods: 6, wantNds: 2},
		{
			name:  "decreasing order packs large pods first",
			shape: plain,
			// In the listed order first-fit would open 3 nodes: [1,1] [3] [3]; FFD opens [3,1] [3,1].
			pods:     append(pendingPods(2, "small", builders.Requesting("cpu", "1")), pendingPods(2, "large", builders.Requesting("cpu", "3"))...),
			wantPods: 4, wantNds: 2,
		},
		{
			name:  "FFD fills gaps: 3+1, 2+2, 2+1+1",
			shape: plain,
			pods: append(append(pendingPods(1, "three", builders.Requesting("cpu", "3")), pendingPods(3, "two", builders.Requesting("cpu", "2"))...),
				pendingPods(3, "one", builders.Requesting("cpu", "1"))...),
			wantPods: 7, wantNds: 3,
		},
		{
			name:     "pods that cannot fit the shape are left out",
			shape:    plain,
			pods:     append(pendingPods(2, "ok", builders.Requesting("cpu", "2")), pendingPods(1, "huge", builders.Requesting("cpu", "16"))...),
			wantPods: 2, wantNds: 1, wantUnfit: 1,
		},
		{
			name:     "tainted shape counts only tolerating pods",
			shape:    shape,
			pods:     append(pendingPods(2, "plain", builders.Requesting("cpu", "1")), pendingPod("tolerating", tolerateGPU, builders.Requesting("cpu", "1"))),
			wantPods: 1, wantNds: 1, wantUnfit: 2,
		},
		{
			name:     "one gpu per node",
			shape:    shape,
			pods:     []*corev1.Pod{pendingPod("g1", tolerateGPU, builders.Requesting("nvidia.com/gpu", "1")), pendingPod("g2", tolerateGPU, builders.Requesting("nvidia.com/gpu", "1"))},
			wantPods: 2, wantNds: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pack(tc.shape, tc.pods)
			if got.Pods != tc.wantPods || got.Nodes != tc.wantNds || len(got.Unfit) != tc.wantUnfit {
				t.Errorf("Pack = %d pods on %d nodes, %d unfit (%v); want %d pods on %d nodes, %d unfit",
					got.Pods, got.Nodes, len(got.Unfit), got.Unfit, tc.wantPods, tc.wantNds, tc.wantUnfit)
			}
		})
	}
}

func TestShapeOf(t *testing.T) {
	n := node("n1", true, builders.Resources("cpu", "4", "memory", "8Gi", "pods", "10"))
	n.Labels = map[string]string{"group": "a", corev1.LabelHostname: "n1"}
	n.Spec.Taints = []corev1.Taint{
		{Key: "k", Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
	}
	daemon := boundPod("agent", "n1", corev1.PodRunning, builders.Requesting("cpu", "500m", "memory", "1Gi"))
	daemon.OwnerReferences = []metav1.OwnerReference{builders.DaemonSetOwner("agent")}
	workload := boundPod("web", "n1", corev1.PodRunning, builders.Requesting("cpu", "2"))
	otherDaemon := boundPod("agent-2", "n2", corev1.PodRunning, builders.Requesting("cpu", "1"))
	otherDaemon.OwnerReferences = daemon.OwnerReferences

	got := ShapeOf(&n, []corev1.Pod{daemon, workload, otherDaemon})
	if _, ok := got.Labels[corev1.LabelHostname]; ok || got.Labels["group"] != "a" {
		t.Errorf("labels = %v, want the node's without its hostname", got.Labels)
	}
	if len(got.Taints) != 1 || got.Taints[0].Key != "k" {
		t.Errorf("taints = %v, want the group's taint without the condition taints", got.Taints)
	}
	if want := builders.Resources("cpu", "3500m", "memory", "7Gi", "pods", "9"); !builders.EqualResources(got.Allocatable, want) {
		t.Errorf("allocatable = %v, want %v (less the DaemonSet pod on the node only)", got.Allocatable, want)
	}
	if n.Labels[corev1.LabelHostname] != "n1" {
		t.Error("ShapeOf changed the node's labels")
	}
}
