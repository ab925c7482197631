package pods

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// replica is a pod of a workload as the API server serves it, decoded from protobuf as the
// informers decode it: each call a separate copy, as each pod of the cache is.
func replica(t *testing.T, name, cpu string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/web:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}}},
			InitContainers: []corev1.Container{{Name: "proxy", Image: "registry.example.com/proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		},
	}
	data, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	decoded := &corev1.Pod{}
	if err := decoded.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return decoded
}

func trimmed(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	obj, err := TrimForCache(pod)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Pod)
}

func TestTrimForCacheSharesWhatPodsCarryAlike(t *testing.T) {
	a, b := trimmed(t, replica(t, "web-a", "1")), trimmed(t, replica(t, "web-b", "1"))
	other := trimmed(t, replica(t, "web-c", "2"))

	shares := []struct {
		part       string
		a, b, ofC  any
		sharedWith bool // whether the pod with another request shares it too
	}{
		{"containers", &a.Spec.Containers[0], &b.Spec.Containers[0], &other.Spec.Containers[0], false},
		{"init containers", &a.Spec.InitContainers[0], &b.Spec.InitContainers[0], &other.Spec.InitContainers[0], true},
		{"tolerations", &a.Spec.Tolerations[0], &b.Spec.Tolerations[0], &other.Spec.Tolerations[0], true},
		{"spread constraints", &a.Spec.TopologySpreadConstraints[0], &b.Spec.TopologySpreadConstraints[0], &other.Spec.TopologySpreadConstraints[0], true},
		{"affinity", a.Spec.Affinity, b.Spec.Affinity, other.Spec.Affinity, true},
	}
	for _, share := range shares {
		if share.a != share.b {
			t.Errorf("two replicas' %s are two copies, want one", share.part)
		}
		if (share.a == share.ofC) != share.sharedWith {
			t.Errorf("a pod with another cpu request shares the %s: %t, want %t", share.part, share.a == share.ofC, share.sharedWith)
		}
	}
	if other.Spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Errorf("the pod with another request has cpu %s, want 2", other.Spec.Containers[0].Resources.Requests.Cpu())
	}
	if len(a.Spec.Tolerations) != cap(a.Spec.Tolerations) || len(a.Spec.Containers) != cap(a.Spec.Containers) {
		t.Errorf("a shared slice's capacity exceeds its length: an append would write into other pods'")
	}

	// Sharing changes no value: a pod trimmed and shared equals the same pod trimmed alone.
	alone := replica(t, "web-a", "1")
	alone.Spec.Containers = trimContainers(alone.Spec.Containers)
	alone.Spec.InitContainers = trimContainers(alone.Spec.InitContainers)
	if !equality.Semantic.DeepEqual(a.Spec.Containers, alone.Spec.Containers) || !equality.Semantic.DeepEqual(a.Spec.InitContainers, alone.Spec.InitContainers) ||
		!equality.Semantic.DeepEqual(a.Spec.Tolerations, alone.Spec.Tolerations) || !equality.Semantic.DeepEqual(a.Spec.Affinity, alone.Spec.Affinity) ||
		!equality.Semantic.DeepEqual(a.Spec.TopologySpreadConstraints, alone.Spec.TopologySpreadConstraints) {
		t.Errorf("a shared pod's spec differs from the pod trimmed alone")
	}

	// Trimming again (the transform must be idempotent) keeps the pod on the shared copies.
	again := trimmed(t, a)
	if &again.Spec.Containers[0] != &b.Spec.Containers[0] || &again.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Errorf("a pod trimmed twice no longer shares its parts")
	}
}

// TestSharedValuesGoWithTheirPods checks that the table holds a value only while a pod
// references it: a cache of churning pods does not grow it.
func TestSharedValuesGoWithTheirPods(t *testing.T) {
	var table internTable[corev1.Toleration]
	func() {
		held := table.slice(replica(t, "web-a", "1").Spec.Tolerations)
		if got := table.size(); got != 1 {
			t.Fatalf("table holds %d values, want 1", got)
		}
		if again := table.slice(replica(t, "web-b", "1").Spec.Tolerations); &again[0] != &held[0] {
			t.Fatalf("an equal value was interned twice")
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for table.size() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the table still holds %d values 30 s after no pod references them", table.size())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	// A value interned anew after its first copy went is held again.
	table.slice(replica(t, "web-c", "1").Spec.Tolerations)
	if got := table.size(); got != 1 {
		t.Errorf("table holds %d values after a new intern, want 1", got)
	}
}
