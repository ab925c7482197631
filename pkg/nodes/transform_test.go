package nodes_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestTrimForCache(t *testing.T) {
	node := builders.Node(builders.NodeOptions{Name: "n", Ready: corev1.ConditionTrue, Labels: map[string]string{"zone": "a"},
		Allocatable: builders.Resources("cpu", "4"), Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}})
	node.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "kept": "yes"}
	node.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	want := node.DeepCopy()
	want.Annotations, want.ManagedFields = map[string]string{"kept": "yes"}, nil
	node.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example.com/app:1"}, SizeBytes: 1 << 30}}
	for range 2 { // trimming twice changes nothing
		if _, err := nodes.TrimForCache(node); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(node, want) {
			t.Errorf("trimmed %+v, want %+v: only the images, managed fields and last-applied configuration dropped", node, want)
		}
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "gone"}
	if got, err := nodes.TrimForCache(tombstone); err != nil || got != tombstone {
		t.Errorf("a tombstone became %v (%v), want it unchanged", got, err)
	}
}
