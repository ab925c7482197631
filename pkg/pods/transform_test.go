package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// replicaOf is a pod of a workload: two containers, the API server's tolerations, an
// anti-affinity and a spread constraint.
func replicaOf(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
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
}

// replica is a replica as the informers decode it, from protobuf: each call a separate copy,
// as each pod of the cache is.
func replica(t *testing.T, name, cpu string) *corev1.Pod {
	t.Helper()
	pod := replicaOf(name, cpu)
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

// encodedReplica is one replica as the API server sends it.
var encodedReplica = func() []byte {
	data, err := replicaOf("web", "1").Marshal()
	if err != nil {
		panic(err)
	}
	return data
}()

// BenchmarkTrimForCache is the transform's cost per pod event: a replica decoded from
// protobuf (not timed), then trimmed and shared as the informer does.
//
//	go test ./pkg/pods -run '^$' -bench TrimForCache -benchmem -count 3
func BenchmarkTrimForCache(b *testing.B) {
	const batch = 1000
	pods := make([]*corev1.Pod, batch)
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			for j := range pods {
				pods[j] = &corev1.Pod{}
				if err := pods[j].Unmarshal(encodedReplica); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		if _, err := TrimForCache(pods[i%batch]); err != nil {
			b.Fatal(err)
		}
	}
}
