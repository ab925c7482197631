// Package nodes holds what Karpenter asks of a node: whether it is Ready, whether Karpenter
// launched it, and whether it may be removed. Every predicate is pure: it reads only the node
// it is given. It also holds the node field index (index.go) that the operator registers once,
// and the writes of taints (taints.go): the JSON patch that removes one, with how to tell its
// refusal, and the karpenter.sh/disrupted taint every disruption path sets before removing a
// node and lifts when it rolls back.
package nodes

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/pools"
)

// ReadyStatus is the status of the node's Ready condition, Unknown when the kubelet has not
// reported one.
func ReadyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			return condition.Status
		}
	}
	return corev1.ConditionUnknown
}

// IsReady is true for a node whose kubelet reports Ready.
func IsReady(node *corev1.Node) bool {
	return ReadyStatus(node) == corev1.ConditionTrue
}

// IsLaunchedByKarpenter is true for a node a Provisioner or a NodePool launched: it carries
// the pool's label (pools.Of).
func IsLaunchedByKarpenter(node *corev1.Node) bool {
	_, ok := pools.Of(node.Labels)
	return ok
}

// HasTerminationFinalizer is true for a node whose deletion the termination controller runs:
// it carries the karpenter.sh/termination finalizer, which the controller puts back on every
// node Karpenter launched that lost it.
func HasTerminationFinalizer(node *corev1.Node) bool {
	return slices.Contains(node.Finalizers, v1alpha5.TerminationFinalizer)
}

// IsRemovable is true for a node Karpenter launched, not already being deleted, that carries
// the termination finalizer: deleting it drains it through the Eviction API (its
// PodDisruptionBudgets and do-not-evict pods hold) and terminates its instance. Every
// controller that deletes nodes asks it first: without the finalizer the Node object would go
// at once, its pods never evicted, and its instance left to garbage collection.
func IsRemovable(node *corev1.Node) bool {
	return IsLaunchedByKarpenter(node) && node.DeletionTimestamp == nil && HasTerminationFinalizer(node)
}

// IsLaunching is true for a node Karpenter launched that its NodeClaim has not registered yet,
// whose kubelet has not yet reported Ready, or whose batch is still launching: it still carries
// one of the launching taints, so nothing is scheduled there yet, but its room is already
// promised to the pods it was launched for.
func IsLaunching(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, IsLaunchingTaint)
}

// IsLaunchingTaint is true for the taints Karpenter's launch puts on a node and lifts itself:
// unregistered (until its NodeClaim registers it), not-ready (until its kubelet reports Ready)
// and launching (until its batch has launched).
func IsLaunchingTaint(taint corev1.Taint) bool {
	return taint.Key == v1.UnregisteredTaintKey || taint.Key == v1alpha5.NotReadyTaintKey || taint.Key == v1alpha5.LaunchingTaintKey
}

// HasConditionTaint is true for a node the node lifecycle controller taints for its condition:
// not ready or unreachable. Such taints also stay on a node that just became Ready until the
// controller has seen it, so nothing may be planned onto it yet.
func HasConditionTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, IsConditionTaint)
}

// IsConditionTaint is true for the node lifecycle controller's taints of a node's condition.
func IsConditionTaint(taint corev1.Taint) bool {
	return taint.Key == corev1.TaintNodeNotReady || taint.Key == corev1.TaintNodeUnreachable
}

// CloudProviderUninitializedTaintKey is the taint a kubelet run with an external cloud provider
// registers its node with, until the cloud controller manager has initialized it.
const CloudProviderUninitializedTaintKey = "node.cloudprovider.kubernetes.io/uninitialized"

// readinessTaintPrefix begins the keys of the Node Readiness Controller's taints, each on a node
// until the condition its rule names is met.
const readinessTaintPrefix = "readiness.k8s.io/"

// IsSetupTaint is true for the taints other components put on a new node and lift once they
// have set it up: the cloud controller manager's uninitialized taint and the Node Readiness
// Controller's. A node Karpenter launched is not initialized while it carries one.
func IsSetupTaint(taint corev1.Taint) bool {
	return taint.Key == CloudProviderUninitializedTaintKey || strings.HasPrefix(taint.Key, readinessTaintPrefix)
}

// IsInitialized is true for a node Karpenter launched once its NodeClaim found it Ready, its
// startup taints gone and every resource it asked for allocatable (label
// karpenter.sh/initialized), and for every node Karpenter did not launch. Before, its room is
// not known: its allocatable may still lack what its pods request (a GPU's device plugin has
// not reported it).
func IsInitialized(node *corev1.Node) bool {
	return !IsLaunchedByKarpenter(node) || node.Labels[v1.NodeInitializedLabelKey] == "true"
}

// AwaitsItsPods is true for a node the pods nominated to it wait for: still launching, or
// Ready by its kubelet while the node lifecycle controller has yet to lift its not-ready taint.
// kube-scheduler fits nothing there yet; a node that was Ready and is not any more is not one.
func AwaitsItsPods(node *corev1.Node) bool {
	return IsLaunching(node) || (IsReady(node) && HasConditionTaint(node))
}

// IsDisrupted is true for a node the disruption controller is removing: tainted
// karpenter.sh/disrupted, so nothing new is scheduled there, until it goes or the disruption is
// rolled back.
func IsDisrupted(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
}
