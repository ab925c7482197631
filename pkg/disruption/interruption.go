package disruption

import (
	"fmt"
	"time"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// An interrupted NodeClaim is one whose instance the cloud takes away at a known time far
// enough ahead to launch its replacement first (an EC2 scheduled change: days or weeks). The
// interruption controller records the interruption on it; the disruption controller replaces its
// node, unbudgeted and whatever holds it (the instance goes anyway), and deletes it once the
// replacements are initialized, or when the interruption is one drain away, whichever comes first.

const (
	// DefaultInterruptionDrain is how long before an interruption its node is deleted, at the
	// latest, for a NodeClaim without a terminationGracePeriod: its drain ends before the instance
	// goes unless something holds it that long.
	DefaultInterruptionDrain = 10 * time.Minute
	// ReplacementLead is how long a replacement needs to launch and initialize: an interruption
	// closer than this plus the drain is not replaced first, its node is drained at once.
	ReplacementLead = 15 * time.Minute
)

// Interruption is an interruption recorded on a NodeClaim.
type Interruption struct {
	// Reason is the karpenter_nodeclaims_disrupted_total reason its node is removed for.
	Reason string
	// Deadline is when the cloud takes the instance away.
	Deadline time.Time
}

// InterruptionOf is the interruption recorded on the NodeClaim; false when none is, or the record
// cannot be read (err says why).
func InterruptionOf(nc *v1.NodeClaim) (Interruption, bool, error) {
	reason, deadline := nc.Annotations[v1.InterruptionReasonAnnotationKey], nc.Annotations[v1.InterruptionDeadlineAnnotationKey]
	if reason == "" && deadline == "" {
		return Interruption{}, false, nil
	}
	at, err := time.Parse(time.RFC3339, deadline)
	if err != nil || reason == "" {
		return Interruption{}, false, fmt.Errorf("nodeclaim %s: interruption %q at %q is not a reason and an RFC 3339 time", nc.Name, reason, deadline)
	}
	return Interruption{Reason: reason, Deadline: at}, true, nil
}

// Annotations are the NodeClaim annotations recording the interruption.
func (i Interruption) Annotations() map[string]string {
	return map[string]string{v1.InterruptionReasonAnnotationKey: i.Reason, v1.InterruptionDeadlineAnnotationKey: i.Deadline.UTC().Format(time.RFC3339)}
}

// DrainBy is when the interrupted NodeClaim is deleted at the latest, replaced or not: its drain
// (its terminationGracePeriod, DefaultInterruptionDrain without one) before the deadline.
func (i Interruption) DrainBy(nc *v1.NodeClaim) time.Time {
	drain := DefaultInterruptionDrain
	if nc.Spec.TerminationGracePeriod != nil {
		drain = nc.Spec.TerminationGracePeriod.Duration
	}
	return i.Deadline.Add(-drain)
}

// ReplaceFirst is whether the interruption leaves time, at now, to launch the NodeClaim's
// replacement and have it initialized before its node must drain.
func (i Interruption) ReplaceFirst(nc *v1.NodeClaim, now time.Time) bool {
	return !i.Deadline.IsZero() && i.DrainBy(nc).Sub(now) >= ReplacementLead
}
