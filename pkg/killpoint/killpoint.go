// Package killpoint lets the fault tests crash the controller at a fixed point of its work, not
// at a time: the environment variable KARPENTER_KILL_POINT names a point, and the process sends
// itself SIGKILL the first time it reaches it, as a crash there would end it. Unset, as it is
// outside those tests, Reached does nothing.
package killpoint

import (
	"os"
	"syscall"
)

// EnvironmentVariable names the point to die at.
const EnvironmentVariable = "KARPENTER_KILL_POINT"

// The points, each where a crash leaves state a restart must finish without a second launch,
// an orphaned instance or a lost pod.
const (
	// NodeClaimsCreated: a launch's NodeClaims exist, the cloud was not asked yet.
	NodeClaimsCreated = "nodeclaims-created"
	// InstancesLaunched: the cloud launched the instances, no NodeClaim recorded its instance.
	InstancesLaunched = "instances-launched"
	// NodeRegistered: the kubelet's Node is matched to its NodeClaim and synced (labels, taints,
	// finalizer, owner), but still carries the unregistered taint and no Registered condition.
	NodeRegistered = "node-registered"
	// PodEvicted: a draining node's first pod is evicted, the drain not done.
	PodEvicted = "pod-evicted"
	// InstanceTerminated: a drained node's instance is terminated, its finalizer not yet removed.
	InstanceTerminated = "instance-terminated"
)

// point is read once: the variable is the process's for its life.
var point = os.Getenv(EnvironmentVariable)

// Reached kills the process at once when name is the point it was told to die at.
func Reached(name string) {
	if point != "" && point == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; nothing more runs
	}
}
