package producers

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// storeReader lists nodes by labels and pods by node name from memory, copying each object's
// top-level struct into the list as the manager's cache does with client.UnsafeDisableDeepCopy,
// so that the benchmark measures the producers rather than a fake API server.
type storeReader struct {
	client.Reader
	nodes []corev1.Node
	pods  map[string][]corev1.Pod
}

func (r *storeReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	options := (&client.ListOptions{}).ApplyOptions(opts)
	switch list := list.(type) {
	case *corev1.NodeList:
		list.Items = nil
		for i := range r.nodes {
			if options.LabelSelector.Matches(labels.Set(r.nodes[i].Labels)) {
				list.Items = append(list.Items, r.nodes[i])
			}
		}
	case *corev1.PodList:
		nodeName, _ := options.FieldSelector.RequiresExactMatch("spec.nodeName")
		list.Items = append([]corev1.Pod(nil), r.pods[nodeName]...)
	default:
		return fmt.Errorf("no list of %T", list)
	}
	return nil
}

// BenchmarkReservedCapacityPeriod computes one period of 250 reservedCapacity producers of one
// nodeSelector over 100 nodes of 10 pods each, as the harness of docs/benchmarks.md creates them.
func BenchmarkReservedCapacityPeriod(b *testing.B) {
	group := map[string]string{"karpenter.sh/node-group": "scale"}
	reader := &storeReader{pods: map[string][]corev1.Pod{}}
	cache := &CapacityCache{}
	for n := range 100 {
		node := readyNode(fmt.Sprintf("node-%d", n), group, builders.Resources("cpu", "16", "memory", "64Gi", "pods", "110"))
		node.ResourceVersion = "1"
		reader.nodes = append(reader.nodes, *node)
		cache.NodeChanged(nil, node)
		for p := range 10 {
			bound := pod(fmt.Sprintf("pod-%d-%d", n, p), node.Name, builders.Resources("cpu", "10m", "memory", "16Mi"))
			bound.ResourceVersion = "1"
			reader.pods[node.Name] = append(reader.pods[node.Name], *bound)
			cache.PodChanged(nil, bound)
		}
	}
	producers := make([]*v1alpha1.MetricsProducer, 250)
	for i := range producers {
		producers[i] = producer(fmt.Sprintf("reserved-%d", i), v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}})
	}
	period := func(b *testing.B, producer *ReservedCapacityProducer) {
		for _, mp := range producers {
			if _, err := producer.Produce(context.Background(), mp); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("read every time", func(b *testing.B) {
		for b.Loop() {
			period(b, &ReservedCapacityProducer{Reader: reader})
		}
	})
	shared := &ReservedCapacityProducer{Reader: reader, Cache: cache}
	// The first period computes everything; b.Loop times what comes after.
	period(b, shared)
	b.Run("shared, nothing changed", func(b *testing.B) {
		for b.Loop() {
			period(b, shared)
		}
	})
	b.Run("shared, a pod changed each period", func(b *testing.B) {
		old, updated := reader.pods["node-0"][0].DeepCopy(), reader.pods["node-0"][0].DeepCopy()
		updated.ResourceVersion = "2"
		for b.Loop() {
			cache.PodChanged(old, updated)
			period(b, shared)
		}
	})
}
