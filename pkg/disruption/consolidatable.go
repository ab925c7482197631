package disruption

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// ConsolidatableAt is when consolidation may first consider the NodeClaim: consolidateAfter
// past the later of its initialization and the last time a pod arrived on or left its node.
// False while it is not initialized, and for a NodePool that never consolidates
// (consolidateAfter: Never) or is static (replicas set).
func ConsolidatableAt(nc *v1.NodeClaim, np *v1.NodePool) (time.Time, bool) {
	after := np.Spec.Disruption.ConsolidateAfter.Duration
	initialized := nc.Condition(v1.ConditionTypeInitialized)
	if after == nil || np.Spec.Replicas != nil || initialized == nil || initialized.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	since := initialized.LastTransitionTime.Time
	if last := nc.Status.LastPodEventTime.Time; last.After(since) {
		since = last
	}
	return since.Add(*after), true
}
