package capacity

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/test/builders"
)

// BenchmarkPack packs n pending pods of mixed sizes onto a 16-core, 64 GiB, 110-pod shape.
func BenchmarkPack(b *testing.B) {
	shape := NodeShape{Allocatable: builders.Resources("cpu", "16", "memory", "64Gi", "pods", "110")}
	sizes := []corev1.Container{
		builders.Requesting("cpu", "250m", "memory", "512Mi"),
		builders.Requesting("cpu", "1", "memory", "2Gi"),
		builders.Requesting("cpu", "2", "memory", "8Gi"),
		builders.Requesting("cpu", "500m", "memory", "4Gi"),
	}
	for _, n := range []int{100, 1000, 5000} {
		pods := make([]*corev1.Pod, n)
		for i := range pods {
			pods[i] = pendingPod(fmt.Sprintf("p%d", i), nil, sizes[i%len(sizes)])
		}
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var packing Packing
			for b.Loop() {
				packing = Pack(shape, pods)
			}
			b.ReportMetric(float64(packing.Nodes), "nodes")
		})
	}
}
