// Package watchcount follows pods and nodes through a watch on the API server and counts them,
// for tests that assert what held at every moment rather than at the moments a poll happened to
// look.
package watchcount

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

// Available watches the pods of namespace that match the label selector; its result stops the
// watch and says the fewest of them that were Running, not being deleted, at any one time since
// want of them first were (-1 if never).
func Available(t testing.TB, config *rest.Config, namespace, selector string, want int) (fewest func() int) {
	t.Helper()
	w, err := clientset(t, config).CoreV1().Pods(namespace).Watch(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	lowest := -1
	return follow(t, w, func(pod *corev1.Pod, gone bool) bool {
		return !gone && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning
	}, func(n int) {
		if (lowest >= 0 || n >= want) && (lowest < 0 || n < lowest) {
			lowest = n
		}
	}, func() int { return lowest })
}

// Disrupted watches the NodePool's nodes; its result stops the watch and says the most of them
// that were disrupted (tainted karpenter.sh/disrupted or being deleted) at any one time.
func Disrupted(t testing.TB, config *rest.Config, nodePool string) (most func() int) {
	t.Helper()
	w, err := clientset(t, config).CoreV1().Nodes().Watch(context.WithoutCancel(t.Context()), metav1.ListOptions{LabelSelector: v1.NodePoolLabelKey + "=" + nodePool})
	if err != nil {
		t.Fatal(err)
	}
	highest := 0
	return follow(t, w, func(node *corev1.Node, gone bool) bool {
		tainted := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
		return !gone && (tainted || node.DeletionTimestamp != nil)
	}, func(n int) { highest = max(highest, n) }, func() int { return highest })
}

func clientset(t testing.TB, config *rest.Config) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// follow counts the watched objects counted says to, by name, and gives each new count to
// observe; its result stops the watch, waits for the last event and says what result does.
func follow[T interface {
	*corev1.Pod | *corev1.Node
	GetName() string
}](t testing.TB, w watch.Interface, counted func(object T, gone bool) bool, observe func(n int), result func() int) func() int {
	var (
		mu   sync.Mutex
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		in := map[string]bool{}
		for event := range w.ResultChan() {
			object, ok := event.Object.(T)
			if !ok {
				continue
			}
			if counted(object, event.Type == watch.Deleted) {
				in[object.GetName()] = true
			} else {
				delete(in, object.GetName())
			}
			mu.Lock()
			observe(len(in))
			mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return func() int {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return result()
	}
}
