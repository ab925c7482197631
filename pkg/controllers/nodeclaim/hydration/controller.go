// Package hydration gives every node a Provisioner launched before NodeClaims existed a NodeClaim
// of its own, built from the node as it is: no relaunch, no disruption. From then on the node is
// looked after through its NodeClaim like any other.
package hydration

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pools"
)

// Name identifies the controller.
const Name = "nodeclaimhydration"

// ReasonHydrated is the Event on a node that got its NodeClaim.
const ReasonHydrated = "NodeClaimHydrated"

// Options configure the controller.
type Options struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// Controller hydrates NodeClaims from nodes.
type Controller struct {
	client   client.Client
	recorder record.EventRecorder
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil {
		return nil, fmt.Errorf("the %s controller needs a client and a recorder", Name)
	}
	return &Controller{client: options.Client, recorder: options.Recorder}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches the nodes a Provisioner launched that no NodeClaim owns.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return needsNodeClaim(o.(*corev1.Node))
		}))).
		Complete(c)
}

// needsNodeClaim is whether a node is one a Provisioner launched before NodeClaims: it carries
// the Provisioner's label and its instance's provider id, no NodeClaim owns it, and it does not
// carry the unregistered taint. A node a kubelet registers for a NodeClaim carries that taint
// until the NodeClaim lifecycle controller registers it, which makes it owned in the same write:
// hydrating it meanwhile would race that write (an e2e batch of 54 nodes logged a conflict on
// most of them).
func needsNodeClaim(node *corev1.Node) bool {
	_, launched := pools.ProvisionerOf(node.Labels)
	_, owned := nodeclaims.Owner(node)
	return launched && node.DeletionTimestamp == nil && node.Spec.ProviderID != "" && !owned && !nodeclaims.Registering(node)
}

// Reconcile creates the node's NodeClaim, unless one recorded its instance already, and makes the
// node owned by it.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, request.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !needsNodeClaim(node) {
		return reconcile.Result{}, nil
	}
	var claims v1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingFields{nodeclaims.NodeClaimProviderIDField: node.Spec.ProviderID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the nodeclaims of instance %s, %w", node.Spec.ProviderID, err)
	}
	var nc *v1.NodeClaim
	if len(claims.Items) > 0 {
		nc = &claims.Items[0]
	} else {
		created, err := c.hydrate(ctx, node)
		if err != nil {
			return reconcile.Result{}, err
		}
		nc = created
		c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonHydrated, "Node launched before NodeClaims: recorded as nodeclaim %s", nc.Name)
		log.FromContext(ctx).Info("hydrated a nodeclaim from a node", "node", node.Name, "nodeclaim", nc.Name)
	}
	owned := node.DeepCopy()
	owned.OwnerReferences = append(owned.OwnerReferences, nodeclaims.OwnerReference(nc))
	if err := c.client.Patch(ctx, owned, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("making node %s owned by nodeclaim %s, %w", node.Name, nc.Name, err))
	}
	return reconcile.Result{}, nil
}

// hydrate creates the NodeClaim a node stands for, named after it, and records on its status what
// the node says: its instance, its capacity, and that it launched and registered (initialized
// too, once Ready).
func (c *Controller) hydrate(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	nc := Build(node)
	status := nc.Status
	if err := c.client.Create(ctx, nc); err != nil {
		return nil, fmt.Errorf("creating nodeclaim %s for node %s, %w", nc.Name, node.Name, err)
	}
	stored := nc.DeepCopy()
	nc.Status = status
	if err := c.client.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return nil, fmt.Errorf("recording node %s on nodeclaim %s, %w", node.Name, nc.Name, err)
	}
	return nc, nil
}

// Build is the NodeClaim of a node launched before NodeClaims, spec and status, as the launcher
// would have made it: the Provisioner's and the offering's labels, the node's instance type, zone
// and capacity type as its requirements, its taints but those Karpenter manages, and its instance.
func Build(node *corev1.Node) *v1.NodeClaim {
	provisioner := node.Labels[v1alpha5.ProvisionerNameLabelKey]
	labels := maps.Clone(node.Labels)
	for _, managed := range []string{corev1.LabelHostname, v1.NodeRegisteredLabelKey, v1.NodeInitializedLabelKey} {
		delete(labels, managed)
	}
	var requirements []v1.NodeSelectorRequirementWithMinValues
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1.CapacityTypeLabelKey} {
		if value := node.Labels[key]; value != "" {
			requirements = append(requirements, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}})
		}
	}
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
		return nodes.IsLaunchingTaint(t) || nodes.IsConditionTaint(t) || t.Key == corev1.TaintNodeUnschedulable
	})
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{
			Taints:       v1.TaintsFrom(taints),
			Requirements: requirements,
			NodeClassRef: &v1.NodeClassReference{Group: v1alpha5.SchemeGroupVersion.Group, Kind: "Provisioner", Name: provisioner},
		},
		Status: v1.NodeClaimStatus{
			NodeName:    node.Name,
			ProviderID:  node.Spec.ProviderID,
			Capacity:    node.Status.Capacity.DeepCopy(),
			Allocatable: node.Status.Allocatable.DeepCopy(),
		},
	}
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Hydrated", "Launched before NodeClaims; recorded from node "+node.Name)
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Hydrated", "")
	if ok, reason, message := nodeclaims.Initialized(nc, node); ok {
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Hydrated", "")
	} else {
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionUnknown, reason, message)
	}
	return nc
}
