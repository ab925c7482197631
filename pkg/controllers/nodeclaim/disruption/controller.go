// Package disruption keeps on each NodePool's NodeClaim the conditions the disruption
// controller decides on: Drifted (with why: its NodePool's template, requirements, EC2NodeClass,
// image, subnets or security groups moved on) and Consolidatable (consolidateAfter has passed since a pod last arrived on or
// left its node), and the lastPodEventTime the latter counts from.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pods"
)

// Name identifies the controller.
const Name = "nodeclaimdisruption"

// driftRecheck is how often drift is checked again without a change of the NodeClaim, its
// NodePool or its class: the class's resolved images move without an event on the NodeClaim.
const driftRecheck = 5 * time.Minute

// Options configure the controller.
type Options struct {
	Client client.Client
	Clock  clock.Clock
	// Instances tells the network the instances run in, for subnet and security group drift,
	// and the instance types offered; nil leaves those out.
	Instances cloudprovider.InstanceProvider
}

// Controller writes the NodeClaims' disruption conditions.
type Controller struct {
	client client.Client
	clock  clock.Clock
	// podEvents is, by node name, when a pod last arrived on or left the node, until written to
	// its NodeClaim's lastPodEventTime.
	mu        sync.Mutex
	podEvents map[string]time.Time
	networks  *instanceNetworks
	offered   *offeredTypes
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client and a clock", Name)
	}
	return &Controller{client: options.Client, clock: options.Clock, podEvents: map[string]time.Time{},
		networks: &instanceNetworks{instances: options.Instances, clock: options.Clock},
		offered:  &offeredTypes{instances: options.Instances, clock: options.Clock, checked: map[offeredKey]offeredAnswer{}}}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch

// SetupWithManager watches NodeClaims, the NodePools and classes they launched from, and the
// pods arriving on and leaving their nodes.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.nodeClaimsWhere(ctx, func(nc *v1.NodeClaim) bool { return nc.Labels[v1.NodePoolLabelKey] == o.GetName() })
		})).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.nodeClaimsWhere(ctx, func(nc *v1.NodeClaim) bool {
				ref := nc.Spec.NodeClassRef
				return ref != nil && ref.Kind == "EC2NodeClass" && ref.Name == o.GetName()
			})
		})).
		Watches(&corev1.Pod{}, handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				c.podEvent(ctx, nil, e.Object.(*corev1.Pod), q)
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				c.podEvent(ctx, e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod), q)
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				// A pod deleted at once, without a grace period, left now.
				if pod, ok := e.Object.(*corev1.Pod); ok && pod.Spec.NodeName != "" && pods.IsMovable(pod) && pod.DeletionTimestamp == nil {
					c.recordPodEvent(ctx, pod.Spec.NodeName, c.clock.Now(), q)
				}
			},
		}).
		Complete(c)
}

// podEvent records a pod bound to a node, or one that stopped running there, at the time it
// did: a pod the cache lists again after a restart carries the time it was bound or stopped,
// not the restart's, so that a restart never postpones consolidation.
func (c *Controller) podEvent(ctx context.Context, old, pod *corev1.Pod, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if pod.Spec.NodeName == "" || !countsForConsolidation(pod) {
		return
	}
	gone := func(p *corev1.Pod) bool { return pods.IsTerminal(p) || p.DeletionTimestamp != nil }
	switch {
	case gone(pod) && (old == nil || !gone(old)):
		c.recordPodEvent(ctx, pod.Spec.NodeName, leftAt(pod, c.clock.Now()), q)
	case !gone(pod) && (old == nil || old.Spec.NodeName == ""):
		c.recordPodEvent(ctx, pod.Spec.NodeName, boundAt(pod, c.clock.Now()), q)
	}
}

// countsForConsolidation is whether a pod's coming or going restarts its node's
// consolidateAfter: a DaemonSet's or a mirror pod does not (every node has them, and a
// DaemonSet's rollout would postpone consolidation everywhere), as upstream leaves them out.
func countsForConsolidation(pod *corev1.Pod) bool {
	return !pods.IsOwnedByDaemonSet(pod) && !pods.IsMirror(pod)
}

// boundAt is when the pod was bound to its node: its PodScheduled condition's transition.
func boundAt(pod *corev1.Pod, now time.Time) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return now
}

// leftAt is when the pod stopped running on its node: when its deletion was asked for (its
// deletion timestamp less its grace period), or when its last container finished.
func leftAt(pod *corev1.Pod, now time.Time) time.Time {
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
		return minTime(pod.DeletionTimestamp.Add(-grace), now)
	}
	var last time.Time
	for _, status := range pod.Status.ContainerStatuses {
		if t := status.State.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if last.IsZero() {
		return now
	}
	return minTime(last, now)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// recordPodEvent notes a pod event on the node at a time and enqueues its NodeClaim.
func (c *Controller) recordPodEvent(ctx context.Context, nodeName string, at time.Time, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return
	}
	name, ok := nodeclaims.Owner(node)
	if !ok {
		return
	}
	c.mu.Lock()
	if at.After(c.podEvents[nodeName]) {
		c.podEvents[nodeName] = at
	}
	c.mu.Unlock()
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

// nodeClaimsWhere are the NodeClaims the predicate selects.
func (c *Controller) nodeClaimsWhere(ctx context.Context, selects func(*v1.NodeClaim) bool) []reconcile.Request {
	var list v1.NodeClaimList
	if err := c.client.List(ctx, &list, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if selects(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// Reconcile stamps a NodeClaim hashed another way with its NodePool's and class's hashes of
// today, and writes its lastPodEventTime, Drifted and Consolidatable.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.client.Get(ctx, request.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil || nc.Labels[v1.NodePoolLabelKey] == "" {
		return reconcile.Result{}, nil
	}
	pool, err := launcher.PoolOf(ctx, c.client, nc)
	if err != nil {
		// A NodeClaim whose NodePool or class is gone is the lifecycle's to end; one whose class
		// this cloud does not know cannot drift by it.
		return reconcile.Result{}, ignoreGone(err)
	}
	if err := c.stamp(ctx, nc, pool); err != nil {
		return reconcile.Result{}, err
	}
	var node *corev1.Node
	if nc.Status.NodeName != "" {
		node = &corev1.Node{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("reading node %s of nodeclaim %s, %w", nc.Status.NodeName, nc.Name, err)
			}
			node = nil
		}
	}
	stored := nc.DeepCopy()
	now := c.clock.Now()
	c.mu.Lock()
	if at, ok := c.podEvents[nc.Status.NodeName]; ok && at.After(nc.Status.LastPodEventTime.Time) {
		nc.Status.LastPodEventTime = metav1.NewTime(at)
	}
	c.mu.Unlock()
	class, _ := pool.NodeClass.(*awsv1.EC2NodeClass)
	var observed disruption.Observed
	if class != nil && nc.IsTrue(v1.ConditionTypeLaunched) {
		observed = disruption.Observed{Instance: c.networks.of(ctx, nc.Status.ProviderID), InstanceTypeGone: c.offered.gone(ctx, nc, class)}
	}
	requeue := setDrifted(nc, node, pool.NodePool, class, observed)
	if next := setConsolidatable(nc, pool.NodePool, now); next > 0 && (requeue == 0 || next < requeue) {
		requeue = next
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.client.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching the disruption conditions of nodeclaim %s, %w", nc.Name, err))
		}
	}
	c.mu.Lock()
	if at, ok := c.podEvents[nc.Status.NodeName]; ok && !at.After(nc.Status.LastPodEventTime.Time) {
		delete(c.podEvents, nc.Status.NodeName)
	}
	c.mu.Unlock()
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// stamp gives a NodeClaim hashed by another HashVersion (upstream's, an earlier one of this
// project) today's hashes of its NodePool and class, so that a change in how hashes compute
// never drifts a fleet.
func (c *Controller) stamp(ctx context.Context, nc *v1.NodeClaim, pool launcher.Pool) error {
	stamped := nc.DeepCopy()
	if stamped.Annotations == nil {
		stamped.Annotations = map[string]string{}
	}
	if stamped.Annotations[v1.NodePoolHashVersionAnnotationKey] != disruption.HashVersion {
		stamped.Annotations[v1.NodePoolHashAnnotationKey] = disruption.NodePoolHash(pool.NodePool)
		stamped.Annotations[v1.NodePoolHashVersionAnnotationKey] = disruption.HashVersion
	}
	if class, ok := pool.NodeClass.(*awsv1.EC2NodeClass); ok && stamped.Annotations[awsv1.EC2NodeClassHashVersionAnnotationKey] != disruption.HashVersion {
		stamped.Annotations[awsv1.EC2NodeClassHashAnnotationKey] = disruption.EC2NodeClassHash(class)
		stamped.Annotations[awsv1.EC2NodeClassHashVersionAnnotationKey] = disruption.HashVersion
	}
	if equality.Semantic.DeepEqual(stamped.Annotations, nc.Annotations) {
		return nil
	}
	if err := c.client.Patch(ctx, stamped, client.MergeFrom(nc)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("stamping nodeclaim %s with today's hashes, %w", nc.Name, err))
	}
	*nc = *stamped
	return nil
}

// setDrifted sets Drifted on a launched NodeClaim that drifted, removes it from one that did not,
// and says when to look again.
func setDrifted(nc *v1.NodeClaim, node *corev1.Node, np *v1.NodePool, class *awsv1.EC2NodeClass, observed disruption.Observed) time.Duration {
	if !nc.IsTrue(v1.ConditionTypeLaunched) {
		return 0
	}
	drift := disruption.Drifted(nc, node, np, class, observed)
	if drift == nil {
		meta.RemoveStatusCondition(&nc.Status.Conditions, v1.ConditionTypeDrifted)
		return driftRecheck
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue,
		Reason: drift.Reason, Message: drift.Message, ObservedGeneration: nc.Generation})
	return driftRecheck
}

// setConsolidatable sets Consolidatable once consolidateAfter has passed, and says when it will
// otherwise; a NodeClaim that may not be consolidated has none.
func setConsolidatable(nc *v1.NodeClaim, np *v1.NodePool, now time.Time) time.Duration {
	at, ok := disruption.ConsolidatableAt(nc, np)
	if !ok || now.Before(at) {
		meta.RemoveStatusCondition(&nc.Status.Conditions, v1.ConditionTypeConsolidatable)
		if ok {
			return at.Sub(now)
		}
		return 0
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue,
		Reason: v1.ConditionTypeConsolidatable, Message: fmt.Sprintf("no pod arrived or left for %s", np.Spec.Disruption.ConsolidateAfter), ObservedGeneration: nc.Generation})
	return 0
}

func ignoreGone(err error) error {
	if gone := (*launcher.PoolGoneError)(nil); errors.As(err, &gone) {
		return nil
	}
	return err
}
