package provisioning

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// With Options.BindPods the allocator binds each pod it planned onto a node it launched (or
// onto one still launching) itself, as Karpenter v0.5 did, once the Node is registered and its
// registration settled (never before: the unregistered taint would evict it, see
// settleBeforeBinding), instead of nominating it and leaving the binding to kube-scheduler.
// kube-scheduler places a pending pod by its own scoring, clears nominations it did not make at
// a failed attempt, and counts only bound pods in a spread's skew, so where it strays from the
// plan a pod finds its room taken and a second node is launched for it (docs/benchmarks.md, plan
// = reality); a bound pod is where the plan put it, and counts in every spread and affinity
// kube-scheduler then evaluates. The price is the one nominations avoid: a bound pod waits for its node's kubelet,
// and when the node never becomes Ready the readiness controller deletes it after
// --node-ready-timeout and its pods with it (their controllers create them again, pending).
//
// Pods whose placement needs more than a node are still nominated and bound by kube-scheduler:
// an unbound claim (its VolumeBinding binds or provisions the volume for the node it picks),
// resource claims (its DynamicResources allocates them), and pods of another scheduler.

// +kubebuilder:rbac:groups="",resources=pods/binding,verbs=create

// bindable tells which of a pass's pods the controller binds itself.
type bindable func(*corev1.Pod) bool

// bindsNone is bindable without BindPods.
func bindsNone(*corev1.Pod) bool { return false }

// bindable are the pods of the snapshot the controller may bind: with BindPods, those of the
// default scheduler with no resource claims whose every claim is bound to a volume.
func (c *Controller) bindable(snapshot *state.Snapshot) bindable {
	if !c.bindPods {
		return bindsNone
	}
	bound := sets.New[string]()
	for i := range snapshot.Claims {
		if claim := &snapshot.Claims[i]; claim.Spec.VolumeName != "" && claim.DeletionTimestamp == nil {
			bound.Insert(claim.Namespace + "/" + claim.Name)
		}
	}
	return func(pod *corev1.Pod) bool {
		if pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName || len(pod.Spec.ResourceClaims) > 0 {
			return false
		}
		for _, name := range pods.ClaimNames(pod) {
			if !bound.Has(pod.Namespace + "/" + name) {
				return false
			}
		}
		return true
	}
}

// place binds the pods of the nominations that may be bound to registered nodes once their
// registration settled (at most launchLimit binding calls at once), waits until the cache shows
// them bound, and returns the rest, to nominate: those bindable refuses or whose node is not
// registered, and those whose binding failed for a reason that may pass (with the error). A pod
// deleted, replaced by another of its name, or bound elsewhere meanwhile (by kube-scheduler, to
// room that opened) is neither bound nor nominated.
func (c *Controller) place(ctx context.Context, nominations []nomination, bindable bindable) (bound map[*corev1.Pod]bool, rest []nomination, err error) {
	bound = map[*corev1.Pod]bool{}
	var binds []nomination
	for _, n := range nominations {
		if !bindable(n.pod) || !c.registered(ctx, n.node) {
			rest = append(rest, n)
			continue
		}
		binds = append(binds, n)
	}
	binds = c.claimBinding(binds)
	defer c.releaseBinding(binds)
	if len(binds) > 0 && !c.settleBeforeBinding(ctx, onto(binds)) {
		return bound, append(rest, binds...), ctx.Err()
	}
	var mu sync.Mutex
	var group errgroup.Group
	group.SetLimit(c.launchLimit)
	var placed []*corev1.Pod
	for _, n := range binds {
		group.Go(func() error {
			err := bind(ctx, c.client.SubResource("binding"), n.pod, n.node)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				bound[n.pod] = true
				placed = append(placed, n.pod)
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			default:
				rest = append(rest, n)
				return err
			}
			return nil
		})
	}
	err = group.Wait()
	if cacheErr := c.awaitBound(ctx, placed); cacheErr != nil && err == nil {
		err = cacheErr
	}
	return bound, rest, err
}

// DefaultBindSettle is the controller binary's Options.BindSettle.
const DefaultBindSettle = 2 * time.Second

// settleBeforeBinding waits until each node has been registered for Options.BindSettle, and
// reports whether ctx ended first. The registration lifts the unregistered taint, which is
// NoExecute: kube-controller-manager's taint eviction deletes a pod bound to a node whose taint
// its cache still shows, and its watch can lag this controller's (an e2e run lost three pods
// bound the moment their node registered so). A pod bound to a new node waits for its kubelet to
// be Ready anyway, which follows registration by far more than the settle.
func (c *Controller) settleBeforeBinding(ctx context.Context, nodes sets.Set[string]) bool {
	if c.bindSettle <= 0 {
		return true
	}
	var wait time.Duration
	for name := range nodes {
		wait = max(wait, c.registeredAt(ctx, name).Add(c.bindSettle).Sub(c.clock.Now()))
	}
	if wait <= 0 {
		return true
	}
	select {
	case <-c.clock.After(wait):
		return true
	case <-ctx.Done():
		return false
	}
}

// registeredAt is when the node's NodeClaim says it registered: now while the cache does not show
// it yet, and long ago for a node of no NodeClaim, which never carried the unregistered taint.
func (c *Controller) registeredAt(ctx context.Context, name string) time.Time {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return c.clock.Now()
	}
	var list v1.NodeClaimList
	if err := c.client.List(ctx, &list, client.MatchingFields{nodeclaims.NodeClaimProviderIDField: node.Spec.ProviderID}); err != nil {
		return c.clock.Now()
	}
	if len(list.Items) == 0 {
		return time.Time{}
	}
	if registered := list.Items[0].Condition(v1.ConditionTypeRegistered); registered != nil && registered.Status == metav1.ConditionTrue {
		return registered.LastTransitionTime.Time
	}
	return c.clock.Now()
}

// claimBinding keeps the nominations whose pods no other place call is binding, and claims them
// until releaseBinding. A batch binds its pods once their node's registration settled; a pass
// seeing the node meanwhile plans the same pods again, maybe each onto the other's node, and two
// callers binding them so put both on one node, past its room (an e2e run had two 1200m pods
// bound to one m5.large so). The pods another call binds are neither bound nor nominated here.
func (c *Controller) claimBinding(nominations []nomination) []nomination {
	c.bindingMu.Lock()
	defer c.bindingMu.Unlock()
	var out []nomination
	for _, n := range nominations {
		if !c.binding.Has(n.pod.UID) {
			c.binding.Insert(n.pod.UID)
			out = append(out, n)
		}
	}
	return out
}

// releaseBinding ends claimBinding's claim.
func (c *Controller) releaseBinding(nominations []nomination) {
	c.bindingMu.Lock()
	defer c.bindingMu.Unlock()
	for _, n := range nominations {
		c.binding.Delete(n.pod.UID)
	}
}

// onto are the nodes of the nominations.
func onto(nominations []nomination) sets.Set[string] {
	out := sets.New[string]()
	for _, n := range nominations {
		out.Insert(n.node)
	}
	return out
}

// registered is whether the cache shows the node registered: a pod bound to a node still
// carrying the unregistered taint (NoExecute) would be evicted from it.
func (c *Controller) registered(ctx context.Context, name string) bool {
	node := &corev1.Node{}
	return c.client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && node.DeletionTimestamp == nil && nodeclaims.Registered(node)
}

// bind binds the pod to the node through the pods/binding subresource, as kube-scheduler does:
// the API server sets spec.nodeName and PodScheduled, and refuses (Conflict) a pod already
// bound, or one of another UID than planned.
func bind(ctx context.Context, writer client.SubResourceClient, pod *corev1.Pod, node string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := writer.Create(ctx, pod, binding); err != nil {
		return fmt.Errorf("binding pod %s/%s to node %s, %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// awaitBound returns once the cache the passes read shows each pod bound (or gone): until
// then a pass would take it for pending, and plan it again.
func (c *Controller) awaitBound(ctx context.Context, bound []*corev1.Pod) error {
	for _, pod := range bound {
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, cacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
			cached := &corev1.Pod{}
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			}
			return cached.UID != pod.UID || cached.Spec.NodeName != "", nil
		})
		if err != nil {
			return fmt.Errorf("pod %s/%s not bound in the cache, %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}
