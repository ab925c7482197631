package disruption

import (
	"time"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// ConsolidatableAt is when consolidation may first consider the NodeClaim: consolidateAfter
// past the later of its initialization and the last time a pod arrived on or left its node.
// False while it is not initialized, and for a NodePool that never consolidates
// (consolidateAfter: Never) or is static (replicas set).
func ConsolidatableAt(nc *v1.NodeClaim, np *v1.NodePool) (time.Time, bool) {
	after := np.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil || np.Spec.Replicas != nil || !nc.IsTrue(v1.ConditionTypeInitialized) {
		return time.Time{}, false
	}
	since := nc.Condition(v1.ConditionTypeInitialized).LastTransitionTime.Time
	if last := nc.Status.LastPodEventTime.Time; last.After(since) {
		since = last
	}
	return since.Add(*after), true
}
