// Package nodeclaims holds what Karpenter asks of a NodeClaim and its node, purely: which
// node registered for it, what registering syncs onto that node, and whether the node is
// initialized. It also holds the field indexes that join nodes and NodeClaims by provider id
// (index.go).
package nodeclaims

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodes"
)

// UnregisteredTaint is the taint a node Karpenter launched registers with: kube-scheduler places
// nothing there and nothing runs there until its NodeClaim has synced the node's labels and
// taints.
var UnregisteredTaint = corev1.Taint{Key: v1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}

// NotReadyTaint is Karpenter's own taint on a node it registers, which the readiness controller
// lifts once it has seen the kubelet report Ready: until then the node counts as launching.
var NotReadyTaint = corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}

// WithNotReadyTaint adds NotReadyTaint to the node, unless it has it, and returns the node.
func WithNotReadyTaint(node *corev1.Node) *corev1.Node {
	if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == NotReadyTaint.Key }) {
		node.Spec.Taints = append(node.Spec.Taints, NotReadyTaint)
	}
	return node
}

// OwnerReference is the reference from a node to the NodeClaim it registered for: deleting the
// NodeClaim deletes the node.
func OwnerReference(nc *v1.NodeClaim) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         v1.SchemeGroupVersion.String(),
		Kind:               "NodeClaim",
		Name:               nc.Name,
		UID:                nc.UID,
		BlockOwnerDeletion: ptr.To(true),
	}
}

// Owner is the name of the NodeClaim a node registered for (OwnerReference), false for a node
// no NodeClaim owns.
func Owner(node metav1.Object) (string, bool) {
	for _, owner := range node.GetOwnerReferences() {
		if owner.Kind == "NodeClaim" && owner.APIVersion == v1.SchemeGroupVersion.String() {
			return owner.Name, true
		}
	}
	return "", false
}

// Sync is the node with its NodeClaim synced onto it: the NodeClaim's labels, annotations and
// taints (its startup taints too) on top of the node's own, the termination finalizer and the
// NodeClaim as its owner. The unregistered taint stays: Register lifts it. The node given is not
// changed.
func Sync(nc *v1.NodeClaim, node *corev1.Node) *corev1.Node {
	out := node.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, nc.Labels)
	if len(nc.Annotations) > 0 {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		maps.Copy(out.Annotations, nc.Annotations)
	}
	for _, t := range append(v1.CoreTaints(nc.Spec.Taints), v1.CoreTaints(nc.Spec.StartupTaints)...) {
		if !slices.ContainsFunc(out.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
			out.Spec.Taints = append(out.Spec.Taints, t)
		}
	}
	if !slices.Contains(out.Finalizers, v1.TerminationFinalizer) {
		out.Finalizers = append(out.Finalizers, v1.TerminationFinalizer)
	}
	if !slices.ContainsFunc(out.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == nc.UID }) {
		out.OwnerReferences = append(out.OwnerReferences, OwnerReference(nc))
	}
	return out
}

// Register is the node as registering makes it: synced (Sync), the unregistered taint gone and
// the registered label set. The node given is not changed.
func Register(nc *v1.NodeClaim, node *corev1.Node) *corev1.Node {
	out := Sync(nc, node)
	out.Labels[v1.NodeRegisteredLabelKey] = "true"
	out.Spec.Taints = slices.DeleteFunc(out.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&UnregisteredTaint) })
	return out
}

// Registered is whether a node is registered: labelled so, the unregistered taint gone. Until
// then no pod may be bound there, and its NodeClaim's labels and taints may not be on it yet.
func Registered(node *corev1.Node) bool {
	return node.Labels[v1.NodeRegisteredLabelKey] == "true" && !Registering(node)
}

// Registering is whether a node carries the unregistered taint its kubelet registered it with:
// its NodeClaim lifecycle controller has not registered it yet.
func Registering(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&UnregisteredTaint) })
}

// IsStartupTaint is whether the taint is one of the NodeClaim's startup taints (none for a nil
// NodeClaim): another component lifts it once the node is set up.
func IsStartupTaint(nc *v1.NodeClaim, t corev1.Taint) bool {
	return nc != nil && slices.ContainsFunc(nc.Spec.StartupTaints, func(s v1.Taint) bool { core := s.Core(); return t.MatchTaint(&core) })
}

// Reasons of the Initialized condition while it is not True.
const (
	ReasonNodeNotReady          = "NodeNotReady"
	ReasonStartupTaintsExist    = "StartupTaintsExist"
	ReasonResourceNotRegistered = "ResourceNotRegistered"
)

// Initialized is whether the node a NodeClaim registered is ready for its pods: its kubelet
// reports Ready, Karpenter's own not-ready and launching taints, the taints other components
// lift once they have set the node up (nodes.IsSetupTaint) and the NodeClaim's startup taints
// are gone, and every resource the NodeClaim asked for is allocatable (a GPU's device
// plugin has reported it). When it is not, the reason and a message for the condition.
func Initialized(nc *v1.NodeClaim, node *corev1.Node) (bool, string, string) {
	if !nodes.IsReady(node) {
		return false, ReasonNodeNotReady, "Node " + node.Name + " is not Ready"
	}
	for _, t := range node.Spec.Taints {
		if nodes.IsLaunchingTaint(t) || nodes.IsSetupTaint(t) {
			return false, ReasonNodeNotReady, "Node " + node.Name + " still has taint " + t.Key
		}
		if IsStartupTaint(nc, t) {
			return false, ReasonStartupTaintsExist, "Node " + node.Name + " still has startup taint " + t.Key
		}
	}
	for _, name := range slices.Sorted(maps.Keys(nc.Spec.Resources.Requests)) {
		requested := nc.Spec.Resources.Requests[name]
		if requested.IsZero() {
			continue
		}
		if allocatable, ok := node.Status.Allocatable[name]; !ok || allocatable.IsZero() {
			return false, ReasonResourceNotRegistered, "Node " + node.Name + " has no allocatable " + string(name) + " yet"
		}
	}
	return true, "", ""
}
