package v1alpha5

import corev1 "k8s.io/api/core/v1"

// Label keys Karpenter sets on the nodes it launches, and the keys a Provisioner may
// constrain in spec.requirements.
const (
	// ProvisionerNameLabelKey names the Provisioner that launched a node. Pods select a
	// Provisioner with a nodeSelector on this key.
	ProvisionerNameLabelKey = "karpenter.sh/provisioner-name"
	// CapacityTypeLabelKey is the purchase option of a node: CapacityTypeSpot or
	// CapacityTypeOnDemand.
	CapacityTypeLabelKey = "karpenter.sh/capacity-type"

	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"

	// TerminationFinalizer is on every node Karpenter launches: the node's object outlives
	// its deletion until its pods are drained and its instance is terminated, so that no
	// instance outlives its node.
	TerminationFinalizer = "karpenter.sh/termination"
	// NotReadyTaintKey (effect NoSchedule) is on every node Karpenter launches until the
	// kubelet reports it Ready: Karpenter creates the Node object as soon as the instance is
	// launched, and nothing may be scheduled there before the node can run it.
	NotReadyTaintKey = "karpenter.sh/not-ready"
	// LaunchingTaintKey (effect NoSchedule) is on every node the allocator launches until the
	// Node of its batch's last launch exists and the batch's pods are bound or nominated:
	// kube-scheduler then sees every zone and host the plan counted on (it counts tainted nodes
	// as domains), and no other pod takes the room planned for one, before it binds a pod there.
	LaunchingTaintKey = "karpenter.sh/launching"
	// EmptinessTimestampAnnotationKey is on a node of a Provisioner with ttlSecondsAfterEmpty
	// while it runs no pods but DaemonSet, mirror and finished ones: when it became empty, in
	// RFC 3339, as Karpenter v0.5 wrote it. The node is deleted ttlSecondsAfterEmpty later.
	EmptinessTimestampAnnotationKey = "karpenter.sh/emptiness-timestamp"
	// ReplacesAnnotationKey is on a node consolidation launched as a replacement: the names
	// of the nodes it replaces, comma separated. It is written with the Node, so the decision
	// survives a restart: once the node is Ready they are deleted, not decided on again.
	ReplacesAnnotationKey = "karpenter.sh/replaces"
	// ReplacementsAnnotationKey is on each of the nodes one consolidation launched together to
	// replace others, when there are several: how many it launched. Until that many exist the
	// old nodes stay.
	ReplacementsAnnotationKey = "karpenter.sh/replacements"
)

// WellKnownLabels are the node labels whose values come from the instance type and offering
// a node launches as; they are the only keys spec.requirements may constrain.
var WellKnownLabels = []string{
	corev1.LabelInstanceTypeStable,
	corev1.LabelTopologyZone,
	corev1.LabelArchStable,
	corev1.LabelOSStable,
	CapacityTypeLabelKey,
}

// Values the well-known labels take on nodes. Architectures are GOARCH names, as the kubelet
// reports them; operating systems are those Kubernetes nodes run. The CRD's rules on
// spec.requirements repeat them.
var (
	Architectures    = []string{"386", "amd64", "arm", "arm64", "ppc64le", "riscv64", "s390x"}
	OperatingSystems = []string{"linux", "windows"}
)
