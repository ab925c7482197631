package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestPodEventsLeaveOutDaemonSetsAndMirrorPods: a pod bound to a node restarts its
// consolidateAfter; a DaemonSet's or a mirror pod does not, as upstream leaves them out (a
// DaemonSet's rollout postponed consolidation on every node; the code before counted them).
func TestPodEventsLeaveOutDaemonSetsAndMirrorPods(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", UID: "claim"}}
	node := builders.Node(builders.NodeOptions{Name: "node"})
	node.OwnerReferences = []metav1.OwnerReference{nodeclaims.OwnerReference(nc)}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		counts bool
	}{
		{name: "a workload's pod", mutate: func(*corev1.Pod) {}, counts: true},
		{name: "a DaemonSet's pod", mutate: func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{builders.DaemonSetOwner("agent")} }},
		{name: "a mirror pod", mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Options{Client: kubefake.NewClientBuilder().WithObjects(nc, node.DeepCopy()).Build(), Clock: clocktesting.NewFakeClock(now)})
			if err != nil {
				t.Fatal(err)
			}
			q := workqueue.NewTypedRateLimitingQueue[reconcile.Request](workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			pod := builders.Pod(builders.PodOptions{Name: "p", NodeName: "node", Phase: corev1.PodRunning})
			tc.mutate(pod)
			c.podEvent(t.Context(), nil, pod, q)
			if _, counted := c.podEvents["node"]; counted != tc.counts {
				t.Errorf("pod event recorded %v, want %v", counted, tc.counts)
			}
		})
	}
}
