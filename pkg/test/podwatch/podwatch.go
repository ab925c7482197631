// Package podwatch follows pods through a watch on the API server, for tests that assert what
// held at every moment rather than at the moments a poll happened to look.
package podwatch

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Available watches the pods of namespace that match the label selector; its result stops the
// watch and says the fewest of them that were Running, not being deleted, at any one time since
// want of them first were (-1 if never).
func Available(t testing.TB, config *rest.Config, namespace, selector string, want int) (fewest func() int) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	w, err := clientset.CoreV1().Pods(namespace).Watch(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		lowest = -1
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		available := map[string]bool{}
		for event := range w.ResultChan() {
			pod, ok := event.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if event.Type == watch.Deleted || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
				delete(available, pod.Name)
			} else {
				available[pod.Name] = true
			}
			mu.Lock()
			if lowest >= 0 || len(available) >= want {
				if lowest < 0 || len(available) < lowest {
					lowest = len(available)
				}
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return func() int {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return lowest
	}
}
