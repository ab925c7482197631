// Package nodewatch follows nodes through a watch on the API server, for tests that assert what
// held at every moment rather than at the moments a poll happened to look.
package nodewatch

import (
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Disrupted watches the NodePool's nodes; its result stops the watch and says the most of them
// that were disrupted (tainted karpenter.sh/disrupted or being deleted) at any one time.
func Disrupted(t testing.TB, config *rest.Config, nodePool string) (most func() int) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	w, err := clientset.CoreV1().Nodes().Watch(context.WithoutCancel(t.Context()), metav1.ListOptions{LabelSelector: v1.NodePoolLabelKey + "=" + nodePool})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		highest int
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		disrupted := map[string]bool{}
		for event := range w.ResultChan() {
			node, ok := event.Object.(*corev1.Node)
			if !ok {
				continue
			}
			tainted := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
			if event.Type != watch.Deleted && (tainted || node.DeletionTimestamp != nil) {
				disrupted[node.Name] = true
			} else {
				delete(disrupted, node.Name)
			}
			mu.Lock()
			highest = max(highest, len(disrupted))
			mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return func() int {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return highest
	}
}
