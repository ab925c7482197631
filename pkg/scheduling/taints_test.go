package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestUntoleratedTaint(t *testing.T) {
	gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	evict := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}
	soft := corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}
	tolerateGPU := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name        string
		tolerations []corev1.Toleration
		taints      []corev1.Taint
		want        string // key of the untolerated taint; empty for none
	}{
		{name: "no taints"},
		{name: "untolerated NoSchedule", taints: []corev1.Taint{gpu}, want: "dedicated"},
		{name: "tolerated NoSchedule", tolerations: []corev1.Toleration{tolerateGPU}, taints: []corev1.Taint{gpu}},
		{name: "toleration of another value", tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml"}}, taints: []corev1.Taint{gpu}, want: "dedicated"},
		{name: "toleration of another effect", tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, taints: []corev1.Taint{gpu}, want: "dedicated"},
		{name: "Exists without key tolerates everything", tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, taints: []corev1.Taint{gpu, evict}},
		{name: "PreferNoSchedule never refuses", taints: []corev1.Taint{soft}},
		{name: "untolerated NoExecute", tolerations: []corev1.Toleration{tolerateGPU}, taints: []corev1.Taint{soft, gpu, evict}, want: "maintenance"},
		{name: "first untolerated is reported", taints: []corev1.Taint{soft, evict, gpu}, want: "maintenance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := UntoleratedTaint(tc.tolerations, tc.taints)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("UntoleratedTaint = %s, want none", got.ToString())
			case tc.want != "" && (got == nil || got.Key != tc.want):
				t.Errorf("UntoleratedTaint = %v, want %s", got, tc.want)
			}
			for i := range tc.taints {
				taint := &tc.taints[i]
				if taint.Key == tc.want && Tolerates(tc.tolerations, taint) {
					t.Errorf("Tolerates(%s) = true for the untolerated taint", taint.ToString())
				}
			}
		})
	}
}
