package emptiness_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/node/emptiness"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ttl := ptr.To(30 * time.Second)
	marked := func(at time.Time) map[string]string {
		return map[string]string{v1alpha5.EmptinessTimestampAnnotationKey: at.Format(time.RFC3339)}
	}
	node := func(ready corev1.ConditionStatus, annotations map[string]string) *corev1.Node {
		return builders.Node(builders.NodeOptions{Name: "n", Ready: ready, Annotations: annotations,
			Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}, Finalizers: []string{v1alpha5.TerminationFinalizer}})
	}
	unfinalized := node(corev1.ConditionTrue, marked(now.Add(-time.Hour)))
	unfinalized.Finalizers = nil
	// Finding 34.5: a pod only nominated to the node waits for it.
	nominated := *builders.Pod(builders.PodOptions{})
	nominated.Status.NominatedNodeName = "n"
	launching := node(corev1.ConditionTrue, nil)
	launching.Spec.Taints = []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	opening := node(corev1.ConditionTrue, marked(now.Add(-time.Hour)))
	opening.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	daemon := *builders.Pod(builders.PodOptions{Owners: []metav1.OwnerReference{builders.DaemonSetOwner("agent")}})
	mirror := *builders.Pod(builders.PodOptions{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}})
	done := *builders.Pod(builders.PodOptions{})
	done.Status.Phase = corev1.PodSucceeded
	app := *builders.Pod(builders.PodOptions{})
	deleting := node(corev1.ConditionTrue, nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	for _, tc := range []struct {
		name   string
		node   *corev1.Node
		ttl    *time.Duration
		pods   []corev1.Pod
		action emptiness.Action
	}{
		{"an empty Ready node is marked", node(corev1.ConditionTrue, nil), ttl, nil, emptiness.Mark},
		{"daemonset, mirror and finished pods leave it empty", node(corev1.ConditionTrue, nil), ttl, []corev1.Pod{daemon, mirror, done}, emptiness.Mark},
		{"a marked node waits for the rest of its TTL", node(corev1.ConditionTrue, marked(now.Add(-10*time.Second))), ttl, nil, emptiness.Wait},
		{"a marked node past its TTL is deleted", node(corev1.ConditionTrue, marked(now.Add(-30*time.Second))), ttl, []corev1.Pod{daemon}, emptiness.Delete},
		{"a pod arriving clears the mark", node(corev1.ConditionTrue, marked(now.Add(-time.Hour))), ttl, []corev1.Pod{app, daemon}, emptiness.Clear},
		{"a node with a pod is left alone", node(corev1.ConditionTrue, nil), ttl, []corev1.Pod{app}, emptiness.Wait},
		{"without a TTL nothing is marked", node(corev1.ConditionTrue, nil), nil, nil, emptiness.Wait},
		{"a TTL removed clears the mark", node(corev1.ConditionTrue, marked(now.Add(-time.Hour))), nil, nil, emptiness.Clear},
		{"a node not Ready is not marked", node(corev1.ConditionFalse, nil), ttl, nil, emptiness.Wait},
		{"a node not Ready keeps its mark but is not deleted", node(corev1.ConditionUnknown, marked(now.Add(-time.Hour))), ttl, nil, emptiness.Wait},
		{"an unreadable mark is written again", node(corev1.ConditionTrue, map[string]string{v1alpha5.EmptinessTimestampAnnotationKey: "yesterday"}), ttl, nil, emptiness.Mark},
		{"a mark from the future is written again", node(corev1.ConditionTrue, marked(now.Add(time.Hour))), ttl, nil, emptiness.Mark},
		{"a node being deleted is left to its finalizer", deleting, ttl, nil, emptiness.Wait},
		{"a node Karpenter did not launch is not its to delete", builders.Node(builders.NodeOptions{Ready: corev1.ConditionTrue}), ttl, nil, emptiness.Wait},
		// Finding 34.7: deleted, it would go without a drain.
		{"a node past its TTL without its termination finalizer waits for it", unfinalized, ttl, nil, emptiness.Wait},
		{"a pod nominated to the node keeps it", node(corev1.ConditionTrue, nil), ttl, []corev1.Pod{nominated, daemon}, emptiness.Wait},
		{"a pod nominated to the node clears the mark", node(corev1.ConditionTrue, marked(now.Add(-time.Hour))), ttl, []corev1.Pod{nominated}, emptiness.Clear},
		{"a Ready node Karpenter has yet to open is not marked", launching, ttl, nil, emptiness.Wait},
		{"a Ready node Kubernetes has yet to open is not deleted", opening, ttl, nil, emptiness.Wait},
		{"a zero TTL deletes at once once marked", node(corev1.ConditionTrue, marked(now)), ptr.To(time.Duration(0)), nil, emptiness.Delete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if action := emptiness.Decide(tc.node, tc.ttl, tc.pods, now); action != tc.action {
				t.Errorf("Decide = %v, want %v", action, tc.action)
			}
		})
	}
}
