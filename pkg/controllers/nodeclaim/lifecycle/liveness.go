package lifecycle

import (
	"time"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Default deadlines of a NodeClaim's life, as upstream Karpenter's: a launch answers in
// seconds, an instance boots and its kubelet registers within minutes, or neither ever will.
const (
	DefaultLaunchTimeout       = 5 * time.Minute
	DefaultRegistrationTimeout = 15 * time.Minute
)

// Timeouts bound each step of a NodeClaim's life; past one, the NodeClaim is deleted and its
// instance, if any, terminated, so that a launch that failed costs no more than its timeout
// and its pods get another node.
type Timeouts struct {
	// Launch is how long after its creation a NodeClaim may wait for its instance.
	Launch time.Duration
	// Registration is how long after its launch an instance's node may take to register.
	Registration time.Duration
	// Initialization is how long after it registered a node may take to become Ready with its
	// startup taints gone (today's --node-ready-timeout).
	Initialization time.Duration
}

// Reasons a NodeClaim is deleted for outliving a step.
const (
	ReasonLaunchTimedOut         = "LaunchTimedOut"
	ReasonRegistrationTimedOut   = "RegistrationTimedOut"
	ReasonInitializationTimedOut = "InitializationTimedOut"
)

// Expired is why a NodeClaim at now has outlived the step it is in, "" while it has not;
// until then, remaining is how long it has left (0 once every step is done).
func (t Timeouts) Expired(nc *v1.NodeClaim, now time.Time) (reason string, remaining time.Duration) {
	step := func(since time.Time, timeout time.Duration, reason string) (string, time.Duration) {
		if left := since.Add(timeout).Sub(now); left > 0 {
			return "", left
		}
		return reason, 0
	}
	switch {
	case !nc.IsTrue(v1.ConditionTypeLaunched):
		return step(nc.CreationTimestamp.Time, t.Launch, ReasonLaunchTimedOut)
	case !nc.IsTrue(v1.ConditionTypeRegistered):
		return step(nc.Condition(v1.ConditionTypeLaunched).LastTransitionTime.Time, t.Registration, ReasonRegistrationTimedOut)
	case !nc.IsTrue(v1.ConditionTypeInitialized):
		return step(nc.Condition(v1.ConditionTypeRegistered).LastTransitionTime.Time, t.Initialization, ReasonInitializationTimedOut)
	}
	return "", 0
}
