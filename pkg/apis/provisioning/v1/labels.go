package v1

// Labels, taints, annotations and finalizers of the v1 API, with the values upstream
// Karpenter gives them: a node or NodeClaim this project launches reads the same to tools
// written for upstream.
const (
	// NodePoolLabelKey names the NodePool a NodeClaim and its node were launched for.
	NodePoolLabelKey = "karpenter.sh/nodepool"
	// CapacityTypeLabelKey is the purchase option of a node: spot or on-demand.
	CapacityTypeLabelKey = "karpenter.sh/capacity-type"
	// NodeRegisteredLabelKey is "true" on a node once its NodeClaim matched it.
	NodeRegisteredLabelKey = "karpenter.sh/registered"
	// NodeInitializedLabelKey is "true" on a node once it is Ready, its startup taints are gone
	// and every resource its NodeClaim asked for is allocatable.
	NodeInitializedLabelKey = "karpenter.sh/initialized"

	// UnregisteredTaintKey (effect NoExecute) is the taint a node registers with: nothing runs
	// there until its NodeClaim has synced the labels and taints the node was launched with.
	UnregisteredTaintKey = "karpenter.sh/unregistered"
	// DisruptedTaintKey (effect NoSchedule) is on a node Karpenter is about to remove.
	DisruptedTaintKey = "karpenter.sh/disrupted"

	// DisruptionReasonAnnotationKey is, on a NodeClaim launched to replace others (beside
	// karpenter.sh/replaces), why they are replaced: drifted or underutilized, the reason their
	// removal is counted under once the replacement is initialized. This project's own.
	DisruptionReasonAnnotationKey = "karpenter.sh/disruption-reason"

	// InterruptionReasonAnnotationKey and InterruptionDeadlineAnnotationKey are, on a NodeClaim
	// whose instance the cloud will take away at a known time far enough ahead (an EC2 scheduled
	// change), the interruption's reason (scheduled_change) and when it starts (RFC 3339): the
	// disruption controller replaces the node first and deletes it in time to drain it. This
	// project's own; upstream drains such a node at once.
	InterruptionReasonAnnotationKey   = "karpenter.sh/interruption-reason"
	InterruptionDeadlineAnnotationKey = "karpenter.sh/interruption-deadline"

	// DoNotDisruptAnnotationKey on a pod or a node blocks voluntary disruption.
	DoNotDisruptAnnotationKey = "karpenter.sh/do-not-disrupt"
	// NodeClaimMinValuesRelaxedAnnotationKey is "true" on a NodeClaim launched with fewer
	// instance types than its requirements' minValues asked for (--min-values-policy
	// BestEffort), "false" or absent otherwise.
	NodeClaimMinValuesRelaxedAnnotationKey = "karpenter.sh/nodeclaim-min-values-relaxed"
	// NodePoolHashAnnotationKey is, on a NodePool and on each NodeClaim launched from it, the
	// hash of the template's fields that drift its nodes when they change (NodePoolHash).
	NodePoolHashAnnotationKey = "karpenter.sh/nodepool-hash"
	// NodePoolHashVersionAnnotationKey is how that hash was computed: NodeClaims stamped by
	// another version are stamped again, never drifted, when the computation changes.
	NodePoolHashVersionAnnotationKey = "karpenter.sh/nodepool-hash-version"
	// TerminationFinalizer holds a NodeClaim and its node until the instance is terminated.
	TerminationFinalizer = "karpenter.sh/termination"
)

// Capacity types.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
)
