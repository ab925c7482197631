package scheduling

import corev1 "k8s.io/api/core/v1"

// Tolerates reports whether one of tolerations tolerates taint.
func Tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}

// UntoleratedTaint returns the first of taints that keeps a pod with tolerations off the node,
// or nil when the pod may go there. Only NoSchedule and NoExecute taints do: PreferNoSchedule
// makes the scheduler prefer other nodes, never refuse this one.
func UntoleratedTaint(tolerations []corev1.Toleration, taints []corev1.Taint) *corev1.Taint {
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !Tolerates(tolerations, taint) {
			return taint
		}
	}
	return nil
}
