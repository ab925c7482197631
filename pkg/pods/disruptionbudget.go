package pods

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// BlockingDisruptionBudget names a PodDisruptionBudget that would refuse evicting all of the
// pods now, "" when none would: every planner that removes a node asks it first.
func BlockingDisruptionBudget(movable []*corev1.Pod, budgets []policyv1.PodDisruptionBudget) string {
	for i := range budgets {
		pdb := &budgets[i]
		// A budget without a selector selects nothing; a malformed one is the apiserver's to
		// refuse.
		if pdb.Spec.Selector == nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		matched := 0
		for _, pod := range movable {
			if pod.Namespace == pdb.Namespace && selector.Matches(labels.Set(pod.Labels)) {
				matched++
			}
		}
		if matched > 0 && int32(matched) > pdb.Status.DisruptionsAllowed {
			return pdb.Namespace + "/" + pdb.Name
		}
	}
	return ""
}
