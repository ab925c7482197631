package pods_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/pods"
)

func TestDoNotDisruptUntil(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-10 * time.Minute))
	for _, tc := range []struct {
		name      string
		value     *string
		start     *metav1.Time
		deleting  bool
		daemon    bool
		finished  bool
		wantHeld  bool
		wantUntil time.Time
		wantErr   bool
	}{
		{name: "no annotation"},
		{name: "true", value: ptr("true"), start: &started, wantHeld: true},
		{name: "a duration not yet past", value: ptr("15m"), start: &started, wantHeld: true, wantUntil: now.Add(5 * time.Minute)},
		{name: "a duration past", value: ptr("5m"), start: &started, wantUntil: now.Add(-5 * time.Minute)},
		{name: "a duration before the pod started", value: ptr("5m"), wantHeld: true, wantUntil: now.Add(5 * time.Minute)},
		{name: "zero", value: ptr("0s"), start: &started, wantErr: true},
		{name: "negative", value: ptr("-5m"), start: &started, wantErr: true},
		{name: "neither", value: ptr("yes"), start: &started, wantErr: true},
		{name: "false", value: ptr("false"), start: &started, wantErr: true},
		{name: "a pod being deleted", value: ptr("true"), start: &started, deleting: true},
		{name: "a DaemonSet's pod holds it too, as upstream's", value: ptr("true"), start: &started, daemon: true, wantHeld: true},
		{name: "a finished pod", value: ptr("true"), start: &started, finished: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Status: corev1.PodStatus{StartTime: tc.start}}
			if tc.value != nil {
				pod.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: *tc.value}
			}
			if tc.deleting {
				pod.DeletionTimestamp = &metav1.Time{Time: now}
			}
			if tc.finished {
				pod.Status.Phase = corev1.PodSucceeded
			}
			if tc.daemon {
				pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "d", Controller: ptr(true)}}
			}
			until, held, err := pods.DoNotDisruptUntil(pod, now)
			if held != tc.wantHeld || !until.Equal(tc.wantUntil) || (err != nil) != tc.wantErr {
				t.Errorf("DoNotDisruptUntil = %s, %v, %v; want %s, %v, error %v", until, held, err, tc.wantUntil, tc.wantHeld, tc.wantErr)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
