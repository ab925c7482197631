// Package state is the one view of the cluster every loop plans on: Cluster reads it from the
// manager's informers (and says when they have synced), Snapshot holds it at one instant, and
// Snapshot.Input is the one builder of the scheduler's input — the provisioning pass, the
// disruption loops and `kubectl karpenter plan` all ask the scheduler through it, so they cannot
// disagree on what room the cluster has. Everything here but Cluster is pure.
package state

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/overlay"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	pkgscheduling "karpenter.sh/karpenter/pkg/scheduling"
)

// Snapshot is the cluster at Now: every pod, node, NodeClaim and DaemonSet, the claims, volumes
// and storage classes that keep pods to zones, the NodeOverlays the planners apply, and the
// instance types the planners may launch, by instance type name (their callers add them, through
// AddInstanceTypes).
type Snapshot struct {
	Now        time.Time
	Pods       []corev1.Pod
	Nodes      []corev1.Node
	NodeClaims []v1.NodeClaim
	DaemonSets []appsv1.DaemonSet
	Claims     []corev1.PersistentVolumeClaim
	Volumes    []corev1.PersistentVolume
	Classes    []storagev1.StorageClass
	// CSINodes say, per existing node, how many volumes each CSI driver attaches there.
	CSINodes []storagev1.CSINode
	// Overlays are the NodeOverlays applied to the instance types planned with: none unless
	// the NodeOverlay feature gate is on, or `kubectl karpenter plan` is given some.
	Overlays      []v1alpha1.NodeOverlay
	InstanceTypes map[string]*cloudprovider.InstanceType
}

// AddInstanceTypes is where instance types enter a plan: it applies the snapshot's
// NodeOverlays to the pools' instance types (all pools at once, as an overlay's conflicts are
// found across them), records them by name for the nodes launched as them, and returns them,
// by pool name, as each pool plans with them, and what became of each overlay.
func (c *Snapshot) AddInstanceTypes(inputs []overlay.Pool) (map[pools.Key][]*cloudprovider.InstanceType, map[string]overlay.Outcome) {
	overlaid, outcomes := overlay.Apply(inputs, c.Overlays)
	out := make(map[pools.Key][]*cloudprovider.InstanceType, len(overlaid))
	for _, pool := range overlaid {
		out[pool.Key] = pool.InstanceTypes
		for _, it := range pool.InstanceTypes {
			c.InstanceTypes[it.Name] = it
		}
	}
	return out, outcomes
}

// Pending are the pods a new node would help, in a stable order: those kube-scheduler found
// no room for, and those nominated to a node that is gone or going (NominationLapsed).
func (c *Snapshot) Pending() []*corev1.Pod {
	standing := c.StandingNodes()
	var out []*corev1.Pod
	for i := range c.Pods {
		if pod := &c.Pods[i]; pods.IsProvisionable(pod) || NominationLapsed(pod, standing) {
			out = append(out, pod)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Room is the nodes pods may still go to, with the pods bound to them. A node
// Karpenter launched that is not Ready yet is room already promised: its not-ready taints
// (Karpenter's, and those Kubernetes puts on every node until its kubelet reports Ready)
// only wait for the kubelet, so they are not taints pods must tolerate, and until the
// kubelet reports its allocatable the instance type's stands for it. Another node that has
// joined but is not Ready yet is room too while it is joining (see joining). Nodes being
// deleted take nothing. A pod nominated to a node takes its room there, as kube-scheduler
// counts it (see nominate.go). A launching node also holds the pods of the DaemonSets that
// will run there and have none there yet (their controller creates them once the Node exists):
// their requests and host ports are taken, as on a new node. Until a node Karpenter launched
// is initialized, it is room as it will be once set up (asSetUp): the taints it carries only
// meanwhile are not taints pods must tolerate, and what it will have allocatable counts, as
// upstream counts them; seen as it is, the node would be no room for the pods waiting for it,
// and each pass would launch another.
func (c *Snapshot) Room() []scheduling.Node {
	bound := map[string][]*corev1.Pod{}
	for i := range c.Pods {
		pod := &c.Pods[i]
		if pod.Spec.NodeName != "" && !pods.IsTerminal(pod) {
			bound[pod.Spec.NodeName] = append(bound[pod.Spec.NodeName], pod)
		} else if node := pods.NominatedNode(pod); node != "" {
			bound[node] = append(bound[node], pod)
		}
	}
	csiNodes := c.CSINodesByName()
	// Every node AllNodes gives has a provider ID, registered or not; its NodeClaim's status
	// names it only once registering is done.
	claims := make(map[string]*v1.NodeClaim, len(c.NodeClaims))
	for i := range c.NodeClaims {
		if nc := &c.NodeClaims[i]; nc.Status.ProviderID != "" {
			claims[nc.Status.ProviderID] = nc
		}
	}
	var daemonPods []*corev1.Pod // by DaemonSet, built for the first launching node
	var out []scheduling.Node
	all := c.AllNodes()
	for i := range all {
		node := &all[i]
		if node.DeletionTimestamp != nil {
			continue
		}
		onNode := bound[node.Name]
		launching := nodes.IsLaunching(node)
		if launching || !nodes.IsInitialized(node) {
			node = c.asSetUp(node, claims[node.Spec.ProviderID], launching)
		}
		if launching {
			if daemonPods == nil {
				daemonPods = c.DaemonSetPods()
			}
			onNode = c.withDaemonSetsToCome(node, onNode, daemonPods)
		} else if joining(node, c.Now) {
			node = node.DeepCopy()
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		}
		out = append(out, scheduling.Node{Node: node, Pods: onNode, CSINode: csiNodes[node.Name]})
	}
	return out
}

// asSetUp is a node Karpenter launched and has not initialized, as it will be once set up:
// without the taints it carries only meanwhile — its NodeClaim's startup taints,
// nodes.IsSetupTaint, and while it is launching the launching and not-ready taints, which only
// wait for Karpenter and the kubelet — and with the allocatable its NodeClaim promises (its
// instance type's, for a NodeClaim that reported none) for each resource the kubelet has not
// reported yet: a launching node's kubelet has reported nothing, and a GPU's device plugin
// reports it after the node is Ready. The node itself when nothing differs.
func (c *Snapshot) asSetUp(node *corev1.Node, nc *v1.NodeClaim, launching bool) *corev1.Node {
	var promised corev1.ResourceList
	if nc != nil {
		promised = nc.Status.Allocatable
	}
	if len(promised) == 0 {
		if it, ok := c.InstanceTypes[node.Labels[corev1.LabelInstanceTypeStable]]; ok {
			promised = it.Allocatable()
		}
	}
	settingUp := func(t corev1.Taint) bool {
		return nodes.IsSetupTaint(t) || nodeclaims.IsStartupTaint(nc, t) || launching && (nodes.IsLaunchingTaint(t) || nodes.IsConditionTaint(t))
	}
	unreported := func(name corev1.ResourceName) bool {
		reported, ok := node.Status.Allocatable[name]
		return !ok || reported.IsZero()
	}
	changes := slices.ContainsFunc(node.Spec.Taints, settingUp)
	for name := range promised {
		changes = changes || unreported(name)
	}
	if !changes {
		return node
	}
	out := node.DeepCopy()
	out.Spec.Taints = slices.DeleteFunc(out.Spec.Taints, settingUp)
	for name, quantity := range promised {
		if unreported(name) {
			if out.Status.Allocatable == nil {
				out.Status.Allocatable = corev1.ResourceList{}
			}
			out.Status.Allocatable[name] = quantity.DeepCopy()
		}
	}
	return out
}

// joiningGrace is how long after it joined a node Karpenter did not launch counts as room
// while Kubernetes still taints it not-ready: a node group's kubelet turns Ready within a
// minute or two of registering (its network plugin starting), and one that takes longer is
// probably broken, so the pods planned onto it are planned again, onto new nodes.
const joiningGrace = 5 * time.Minute

// joining is true for a node that registered less than joiningGrace ago and carries
// Kubernetes' standard not-ready taint, which only waits for its kubelet to report Ready. A
// node tainted unreachable has a kubelet that stopped (or never started) reporting: it is not
// coming, whatever its age.
func joining(node *corev1.Node, now time.Time) bool {
	if now.Sub(node.CreationTimestamp.Time) >= joiningGrace {
		return false
	}
	notReady := false
	for _, t := range node.Spec.Taints {
		switch t.Key {
		case corev1.TaintNodeUnreachable:
			return false
		case corev1.TaintNodeNotReady:
			notReady = true
		}
	}
	return notReady
}

// withDaemonSetsToCome adds to a launching node's pods the pod (daemonPods, by DaemonSet) of
// each DaemonSet that tolerates and selects the node and has no pod bound there yet.
func (c *Snapshot) withDaemonSetsToCome(node *corev1.Node, onNode, daemonPods []*corev1.Pod) []*corev1.Pod {
	out := onNode
	for i, pod := range daemonPods {
		ds := &c.DaemonSets[i]
		if slices.ContainsFunc(onNode, func(pod *corev1.Pod) bool { return metav1.IsControlledBy(pod, ds) }) ||
			pkgscheduling.UntoleratedTaint(pod.Spec.Tolerations, node.Spec.Taints) != nil || pkgscheduling.CheckNodeAffinity(pod, node.Labels) != nil {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// DaemonSetPods stands one pod for each DaemonSet, as it would run on a new node: the
// scheduler reserves its requests on every new node it tolerates and selects.
func (c *Snapshot) DaemonSetPods() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range c.DaemonSets {
		out = append(out, pods.ForDaemonSet(&c.DaemonSets[i]))
	}
	return out
}

// CSINodesByName are the CSINodes by the name of their node.
func (c *Snapshot) CSINodesByName() map[string]*storagev1.CSINode {
	out := make(map[string]*storagev1.CSINode, len(c.CSINodes))
	for i := range c.CSINodes {
		out[c.CSINodes[i].Name] = &c.CSINodes[i]
	}
	return out
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// LaunchingNodes are the nodes still launching or, launched by Karpenter, not initialized yet,
// with the provisioner that launched each: kube-scheduler binds nothing there yet (or not all
// the pods planned there), so the pods planned onto them are nominated.
func (c *Snapshot) LaunchingNodes() map[string]string {
	out := map[string]string{}
	for i := range c.Nodes {
		if node := &c.Nodes[i]; nodes.IsLaunching(node) || !nodes.IsInitialized(node) {
			key, _ := pools.Of(node.Labels)
			out[node.Name] = key.Name
		}
	}
	return out
}

// StandingNodes are the names of the nodes a nomination may stand on: those not being deleted,
// the launching nodes standing for NodeClaims among them (AllNodes).
func (c *Snapshot) StandingNodes() sets.Set[string] {
	out := sets.New[string]()
	for _, node := range c.AllNodes() {
		if node.DeletionTimestamp == nil {
			out.Insert(node.Name)
		}
	}
	return out
}

// NominationLapsed is true for a pod kube-scheduler found no room for that is nominated to a
// node not among standing (gone, or being deleted): it waits for a node as if not nominated,
// though kube-scheduler clears the nomination only at the pod's next attempt, and never for a
// pod that may not preempt.
func NominationLapsed(pod *corev1.Pod, standing sets.Set[string]) bool {
	if node := pods.NominatedNode(pod); node == "" || standing.Has(node) {
		return false
	}
	unnominated := *pod
	unnominated.Status.NominatedNodeName = ""
	return pods.IsProvisionable(&unnominated)
}

// AllNodes are the nodes, and a launching node standing for each NodeClaim whose instance is
// launched but whose Node has not registered yet: its room is promised to the pods it was
// launched for, so no pass launches for them again meanwhile. It is named after the NodeClaim;
// being no Node yet, no pod is bound to it, and only a pass's own snapshot nominates pods to it:
// those its launch is for (LaunchingNodes are the Nodes'). A Node its kubelet registered that its NodeClaim has not yet registered (it still
// carries the unregistered taint) stands as registering will make it, still launching. A
// NodeClaim that registered once and has no Node now lost it: no room.
func (c *Snapshot) AllNodes() []corev1.Node {
	launched := map[string]*v1.NodeClaim{}
	for i := range c.NodeClaims {
		if nc := &c.NodeClaims[i]; nc.Status.ProviderID != "" && nc.DeletionTimestamp == nil {
			launched[nc.Status.ProviderID] = nc
		}
	}
	registered := sets.New[string]()
	// out is the snapshot's own slice until it must differ.
	out, cloned := c.Nodes, false
	ownCopy := func() {
		if !cloned {
			out, cloned = slices.Clone(c.Nodes), true
		}
	}
	for i := range c.Nodes {
		node := &c.Nodes[i]
		if node.Spec.ProviderID == "" {
			continue
		}
		registered.Insert(node.Spec.ProviderID)
		nc, ok := launched[node.Spec.ProviderID]
		if !ok || !nodeclaims.Registering(node) {
			continue
		}
		ownCopy()
		out[i] = *nodeclaims.WithNotReadyTaint(nodeclaims.Register(nc, node))
	}
	for i := range c.NodeClaims {
		nc := &c.NodeClaims[i]
		if nc.Status.ProviderID == "" || nc.Status.NodeName != "" || nc.DeletionTimestamp != nil || registered.Has(nc.Status.ProviderID) {
			continue
		}
		ownCopy()
		out = append(out, nodeOfNodeClaim(nc))
	}
	return out
}

// nodeOfNodeClaim is the Node a launched NodeClaim will register, as registering makes it,
// with the not-ready taint of a node still launching and the capacity its instance reported.
func nodeOfNodeClaim(nc *v1.NodeClaim) corev1.Node {
	return *nodeclaims.WithNotReadyTaint(nodeclaims.Register(nc, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: map[string]string{corev1.LabelHostname: nc.Name}, CreationTimestamp: nc.CreationTimestamp},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID},
		Status:     corev1.NodeStatus{Capacity: nc.Status.Capacity, Allocatable: nc.Status.Allocatable},
	}))
}
