package state

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestDisplacedNominations: a pod nominated to a node that no longer awaits its pods is
// displaced when the pods bound there, others' nominations and those of ours ahead of it (by
// priority, then creation) leave no room for it; pods bound elsewhere, terminal pods, and
// nodes still launching leave ours in place.
func TestDisplacedNominations(t *testing.T) {
	open := builders.Node(builders.NodeOptions{Name: "open", Ready: corev1.ConditionTrue, Allocatable: builders.Resources("cpu", "2", "pods", "10")})
	launching := builders.Node(builders.NodeOptions{Name: "launching", Ready: corev1.ConditionTrue, Allocatable: builders.Resources("cpu", "2", "pods", "10"),
		Taints: []corev1.Taint{{Key: v1alpha5.LaunchingTaintKey, Effect: corev1.TaintEffectNoSchedule}}})
	launched := func(name string, labels ...string) *corev1.Node {
		node := builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Allocatable: builders.Resources("cpu", "2", "pods", "10")})
		node.Labels = map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}
		for i := 0; i+1 < len(labels); i += 2 {
			node.Labels[labels[i]] = labels[i+1]
		}
		return node
	}
	uninitialized, initialized := launched("uninitialized"), launched("initialized", v1.NodeInitializedLabelKey, "true")
	created := int64(0)
	// pod is created a second after the one before it.
	pod := func(name, cpu string, mutate func(*corev1.Pod)) corev1.Pod {
		p := builders.Pod(builders.PodOptions{Name: name, Requests: builders.Resources("cpu", cpu), Unschedulable: true})
		p.UID = types.UID(name)
		created++
		p.CreationTimestamp = metav1.Unix(created, 0)
		if mutate != nil {
			mutate(p)
		}
		return *p
	}
	nominatedTo := func(node string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.NominatedNodeName = node }
	}
	boundTo := func(node string, phase corev1.PodPhase) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase, p.Status.Conditions = node, phase, nil }
	}
	for _, tc := range []struct {
		name      string
		nodes     []corev1.Node
		pods      []corev1.Pod
		nominated map[types.UID]string
		displaced []string
		unbound   int
	}{{
		name:      "room left: unbound, not displaced",
		nodes:     []corev1.Node{*open},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("open")), pod("small", "400m", boundTo("open", corev1.PodRunning))},
		nominated: map[types.UID]string{"a": "open"},
		unbound:   1,
	}, {
		name:      "a pod bound there took the room",
		nodes:     []corev1.Node{*open},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("open")), pod("b", "1500m", boundTo("open", corev1.PodRunning))},
		nominated: map[types.UID]string{"a": "open"},
		displaced: []string{"a"},
	}, {
		name:      "a terminal pod takes nothing",
		nodes:     []corev1.Node{*open},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("open")), pod("b", "1500m", boundTo("open", corev1.PodSucceeded))},
		nominated: map[types.UID]string{"a": "open"},
		unbound:   1,
	}, {
		name:      "a node still launching keeps its nominations",
		nodes:     []corev1.Node{*launching},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("launching")), pod("b", "1500m", boundTo("launching", corev1.PodPending))},
		nominated: map[types.UID]string{"a": "launching"},
	}, {
		name:  "another's nomination of equal or higher priority counts first",
		nodes: []corev1.Node{*open},
		pods: []corev1.Pod{pod("a", "1500m", nominatedTo("open")), pod("b", "1500m", nominatedTo("open")),
			pod("preemptor", "500m", nominatedTo("open")),
			pod("high", "1", func(p *corev1.Pod) { p.Status.NominatedNodeName = "open"; p.Spec.Priority = ptr.To[int32](10) })},
		nominated: map[types.UID]string{"a": "open", "b": "open"},
		displaced: []string{"a", "b"},
	}, {
		name:  "another's nomination of equal priority counts before ours, even ours older",
		nodes: []corev1.Node{*open},
		pods: []corev1.Pod{pod("a", "1", nominatedTo("open")), pod("b", "1", nominatedTo("open")),
			pod("preemptor", "1", nominatedTo("open"))},
		nominated: map[types.UID]string{"a": "open", "b": "open"},
		displaced: []string{"b"},
		unbound:   1,
	}, {
		name:  "another's nomination of lower priority does not count",
		nodes: []corev1.Node{*open},
		pods: []corev1.Pod{pod("a", "1500m", nominatedTo("open")),
			pod("low", "1500m", func(p *corev1.Pod) { p.Status.NominatedNodeName = "open"; p.Spec.Priority = ptr.To[int32](-1) })},
		nominated: map[types.UID]string{"a": "open"},
		unbound:   1,
	}, {
		name:  "only what the pod requests is compared",
		nodes: []corev1.Node{*open},
		pods: []corev1.Pod{pod("a", "1", nominatedTo("open")), pod("b", "500m", func(p *corev1.Pod) {
			boundTo("open", corev1.PodRunning)(p)
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
		})},
		nominated: map[types.UID]string{"a": "open"},
		unbound:   1,
	}, {
		name:      "a node of Karpenter's not initialized yet: its room is not known",
		nodes:     []corev1.Node{*uninitialized},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("uninitialized")), pod("b", "1500m", boundTo("uninitialized", corev1.PodRunning))},
		nominated: map[types.UID]string{"a": "uninitialized"},
		unbound:   1,
	}, {
		name:      "a node of Karpenter's initialized",
		nodes:     []corev1.Node{*initialized},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("initialized")), pod("b", "1500m", boundTo("initialized", corev1.PodRunning))},
		nominated: map[types.UID]string{"a": "initialized"},
		displaced: []string{"a"},
	}, {
		name:  "of ours, the higher priority then the older keeps the room, a smaller one the rest",
		nodes: []corev1.Node{*open},
		pods: []corev1.Pod{pod("old", "1500m", nominatedTo("open")), pod("newer", "1500m", nominatedTo("open")),
			pod("low", "100m", func(p *corev1.Pod) { p.Status.NominatedNodeName = "open"; p.Spec.Priority = ptr.To[int32](-5) }),
			pod("high", "300m", func(p *corev1.Pod) { p.Status.NominatedNodeName = "open"; p.Spec.Priority = ptr.To[int32](5) })},
		nominated: map[types.UID]string{"old": "open", "newer": "open", "low": "open", "high": "open"},
		displaced: []string{"newer"},
		unbound:   3,
	}, {
		name:      "nominated elsewhere than recorded: not ours there",
		nodes:     []corev1.Node{*open},
		pods:      []corev1.Pod{pod("a", "1500m", nominatedTo("open")), pod("b", "1500m", boundTo("open", corev1.PodRunning))},
		nominated: map[types.UID]string{"a": "launching"},
	}, {
		name:      "the pods resource counts",
		nodes:     []corev1.Node{*builders.Node(builders.NodeOptions{Name: "open", Ready: corev1.ConditionTrue, Allocatable: builders.Resources("cpu", "2", "pods", "1")})},
		pods:      []corev1.Pod{pod("a", "100m", nominatedTo("open")), pod("b", "100m", boundTo("open", corev1.PodRunning))},
		nominated: map[types.UID]string{"a": "open"},
		displaced: []string{"a"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snapshot := &Snapshot{Nodes: tc.nodes, Pods: tc.pods}
			displaced, unbound := snapshot.DisplacedNominations(tc.nominated)
			var names []string
			for _, p := range displaced {
				names = append(names, p.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.displaced) || unbound != tc.unbound {
				t.Errorf("displaced %v, %d unbound; want %v, %d", names, unbound, tc.displaced, tc.unbound)
			}
		})
	}
}
