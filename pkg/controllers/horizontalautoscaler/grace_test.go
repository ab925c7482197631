package horizontalautoscaler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
)

func TestAwaitingFirstMetrics(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		age    time.Duration
		active corev1.ConditionStatus
		want   bool
	}{
		{name: "new, never read", age: 10 * time.Second, active: corev1.ConditionUnknown, want: true},
		{name: "new, read before", age: 10 * time.Second, active: corev1.ConditionTrue, want: false},
		{name: "past the grace", age: metricsGracePeriod, active: corev1.ConditionUnknown, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{options: Options{Clock: clocktesting.NewFakeClock(created.Add(tc.age))}}
			ha := &v1alpha1.HorizontalAutoscaler{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
			ha.Status.Conditions = apis.Conditions{{Type: v1alpha1.Active, Status: tc.active}}
			if got := c.awaitingFirstMetrics(ha); got != tc.want {
				t.Errorf("awaitingFirstMetrics = %t, want %t", got, tc.want)
			}
		})
	}
}
