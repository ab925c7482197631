package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/test/sandbox"
)

const (
	// inflate is upstream's getting-started workload: pods of one CPU, scaled to inflateReplicas.
	inflate         = "inflate"
	inflateReplicas = 5
	// gettingStartedNodePool names the guide's NodePool and its EC2NodeClass alike.
	gettingStartedNodePool = "default"
)

// playNodePoolChapter applies upstream v1's getting-started NodePool and EC2NodeClass, waits for
// both Ready, scales inflate onto the NodePool's nodes, prints what `kubectl get
// nodepools,ec2nodeclasses,nodeclaims` shows, drifts the nodes and watches them replaced, lets
// consolidation shrink them to one cheaper node once inflate is down to one pod, and deletes all
// of it again, so that whatever runs
// after the story meets the cluster as the earlier chapters left it.
func (t *timeline) playNodePoolChapter(ctx context.Context, stack *sandbox.Stack) error {
	c := stack.Env.Client
	objects, err := sandbox.NodePoolExample()
	if err != nil {
		return fmt.Errorf("reading %s, %w", sandbox.NodePoolExampleFile, err)
	}
	t.step("upstream v1's getting-started NodePool %q and EC2NodeClass %q arrive (%s): the class resolves subnets, security groups and AMIs by their tags and alias, and creates its instance profile",
		gettingStartedNodePool, gettingStartedNodePool, sandbox.NodePoolExampleFile)
	if err := sandbox.Apply(ctx, c, objects); err != nil {
		return err
	}
	for _, object := range objects {
		if err := waitReady(ctx, stack, object); err != nil {
			return err
		}
	}
	t.step("EC2NodeClass and NodePool %q Ready", gettingStartedNodePool)

	// The guide's inflate selects nothing; here the general group's nodes have room for some of
	// it, and the spot Provisioner, of the same weight 0, is cheaper than the NodePool's
	// on-demand nodes. Selecting the NodePool's label sends every pod to it.
	t.step("Deployment %q scales to %d pods of 1 CPU selecting karpenter.sh/nodepool: %s (without it the general group's room and the cheaper spot Provisioner of the same weight would take them)",
		inflate, inflateReplicas, gettingStartedNodePool)
	deployment := builders.Deployment(builders.DeploymentOptions{Name: inflate, Namespace: sandbox.Namespace, Replicas: inflateReplicas, Pod: builders.PodOptions{
		Labels:       map[string]string{"app": inflate},
		NodeSelector: map[string]string{v1.NodePoolLabelKey: gettingStartedNodePool},
		Requests:     builders.Resources("cpu", "1"),
	}})
	if err := c.Create(ctx, deployment); err != nil {
		return fmt.Errorf("creating deployment %s, %w", inflate, err)
	}
	claims, err := waitInflate(ctx, c)
	if err != nil {
		return err
	}
	t.step("%d inflate pods Running on NodePool %q's NodeClaims (%d, on-demand): $%.4f/h", inflateReplicas, gettingStartedNodePool, claims, nodePoolCost(stack))
	t.step("kubectl get nodepools,ec2nodeclasses,nodeclaims")
	t.kubectl(ctx, stack.Env.KubeconfigPath, "get", "nodepools,ec2nodeclasses,nodeclaims")

	if err := t.playDisruption(ctx, stack, claims); err != nil {
		return err
	}
	t.step("inflate and NodePool %q are deleted, then the EC2NodeClass", gettingStartedNodePool)
	if err := cleanUpNodePoolChapter(ctx, c); err != nil {
		return err
	}
	t.step("the NodePool chapter's objects and nodes are gone")
	return nil
}

// rolloutLabel is the template label the story adds to drift the NodePool's nodes.
const rolloutLabel = "example.com/rollout"

// playDisruption drifts the NodePool's nodes by a label added to its template, waits for every
// inflate pod to run on the replacements, then scales inflate to one pod and waits for
// consolidation to leave one node for it once the guide's consolidateAfter has passed.
func (t *timeline) playDisruption(ctx context.Context, stack *sandbox.Stack, claims int) error {
	c := stack.Env.Client
	np := &v1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: gettingStartedNodePool}, np); err != nil {
		return fmt.Errorf("reading nodepool %s, %w", gettingStartedNodePool, err)
	}
	budget, _ := disruption.Allowed(np.Spec.Disruption.Budgets, v1.DisruptionReasonDrifted, claims, 0, time.Now())
	t.step("NodePool %q's template gains the label %s=2: its NodeClaims (%d) drift (NodePoolDrifted) and are replaced, %d at a time (its budget), each replacement launched and initialized before the old node is drained",
		gettingStartedNodePool, rolloutLabel, claims, budget)
	stored := np.DeepCopy()
	if np.Spec.Template.Labels == nil {
		np.Spec.Template.Labels = map[string]v1.LabelValue{}
	}
	np.Spec.Template.Labels[rolloutLabel] = "2"
	if err := c.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("labelling nodepool %s's template, %w", gettingStartedNodePool, err)
	}
	started := time.Now()
	if err := waitRolledOut(ctx, c); err != nil {
		return err
	}
	t.step("every inflate pod runs on a replacement labelled %s=2 after %s", rolloutLabel, time.Since(started).Round(time.Second))
	t.step("kubectl get nodeclaims")
	t.kubectl(ctx, stack.Env.KubeconfigPath, "get", "nodeclaims")

	deployment := builders.Deployment(builders.DeploymentOptions{Name: inflate, Namespace: sandbox.Namespace})
	if err := c.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
		return fmt.Errorf("reading deployment %s, %w", inflate, err)
	}
	before := nodePoolCost(stack)
	t.step("inflate scales to 1: once its consolidateAfter (%s) and the 15 s validation have passed, the NodePool's empty nodes go (Empty) and a node left underutilized is replaced by a cheaper one launched first, or deleted (Underutilized)",
		np.Spec.Disruption.ConsolidateAfter)
	scaled := deployment.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](1)
	if err := c.Patch(ctx, scaled, client.MergeFrom(deployment)); err != nil {
		return fmt.Errorf("scaling deployment %s to 1, %w", inflate, err)
	}
	started = time.Now()
	if err := waitConsolidatedToOne(ctx, stack, before); err != nil {
		return err
	}
	t.step("consolidation left one NodeClaim for the one pod %s after inflate scaled to 1: $%.4f/h, was $%.4f/h", time.Since(started).Round(time.Second), nodePoolCost(stack), before)
	t.step("kubectl get nodeclaims")
	t.kubectl(ctx, stack.Env.KubeconfigPath, "get", "nodeclaims")
	return nil
}

// waitConsolidatedToOne waits until the NodePool has one NodeClaim, Ready and not being deleted,
// with inflate's one pod Running on it, and its instances cost less than before.
func waitConsolidatedToOne(ctx context.Context, stack *sandbox.Stack, before float64) error {
	c := stack.Env.Client
	var last string
	return waitFor(ctx, "one cheaper NodeClaim of the NodePool, running inflate's pod", &last, func() (bool, error) {
		list := &v1.NodeClaimList{}
		if err := c.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: gettingStartedNodePool}); err != nil {
			return false, err
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": inflate}); err != nil {
			return false, err
		}
		cost := nodePoolCost(stack)
		last = fmt.Sprintf("%d NodeClaims, %d inflate pods, $%.4f/h", len(list.Items), len(pods.Items), cost)
		if len(list.Items) != 1 || len(pods.Items) != 1 || cost >= before {
			return false, nil
		}
		nc, pod := list.Items[0], pods.Items[0]
		return nc.DeletionTimestamp == nil && nc.IsTrue(v1.ConditionTypeReady) && pod.DeletionTimestamp == nil &&
			pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName == nc.Status.NodeName, nil
	})
}

// waitRolledOut waits until every inflate pod runs on a node labelled with the rollout and no
// NodeClaim of the NodePool lacks it.
func waitRolledOut(ctx context.Context, c client.Client) error {
	var last string
	return waitFor(ctx, "inflate on the replacements", &last, func() (bool, error) {
		list := &v1.NodeClaimList{}
		if err := c.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: gettingStartedNodePool}); err != nil {
			return false, err
		}
		replaced := map[string]bool{}
		old := 0
		for _, nc := range list.Items {
			if nc.Labels[rolloutLabel] == "2" {
				replaced[nc.Status.NodeName] = true
			} else {
				old++
			}
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": inflate}); err != nil {
			return false, err
		}
		moved := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && replaced[pod.Spec.NodeName] {
				moved++
			}
		}
		last = fmt.Sprintf("%d of %d pods on replacements, %d NodeClaims not replaced yet", moved, inflateReplicas, old)
		return moved == inflateReplicas && old == 0, nil
	})
}

// waitReady waits until object's Ready condition is True.
func waitReady(ctx context.Context, stack *sandbox.Stack, object *unstructured.Unstructured) error {
	what := fmt.Sprintf("%s/%s Ready", strings.ToLower(object.GetKind()), object.GetName())
	var last string
	return waitFor(ctx, what, &last, func() (bool, error) {
		ready, why, err := sandbox.Ready(ctx, stack.Env.Client, object)
		last = why
		return ready, err
	})
}

// waitInflate waits until every inflate pod runs and each NodeClaim of the NodePool is Ready,
// and returns how many NodeClaims there are.
func waitInflate(ctx context.Context, c client.Client) (int, error) {
	var last string
	claims := 0
	err := waitFor(ctx, fmt.Sprintf("%d inflate pods Running on Ready NodeClaims of nodepool %s", inflateReplicas, gettingStartedNodePool), &last, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": inflate}); err != nil {
			return false, err
		}
		running := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
				running++
			}
		}
		list := &v1.NodeClaimList{}
		if err := c.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: gettingStartedNodePool}); err != nil {
			return false, err
		}
		ready := 0
		for _, nc := range list.Items {
			if nc.DeletionTimestamp == nil && nc.IsTrue(v1.ConditionTypeReady) {
				ready++
			}
		}
		claims = len(list.Items)
		last = fmt.Sprintf("%d pods Running, %d of %d NodeClaims Ready", running, ready, claims)
		return running == inflateReplicas && claims > 0 && ready == claims, nil
	})
	return claims, err
}

// nodePoolCost is what the NodePool's live instances cost, in $/h.
func nodePoolCost(stack *sandbox.Stack) float64 {
	cost := 0.0
	for _, instance := range stack.Emulator.EC2Instances() {
		if instance.Tags[v1.NodePoolLabelKey] == gettingStartedNodePool && instance.State != "shutting-down" && instance.State != "terminated" {
			cost += instance.PricePerHour
		}
	}
	return cost
}

// cleanUpNodePoolChapter deletes inflate, then the NodePool and its class (RemoveNodePoolExample:
// the NodeClaims go with the NodePool, drained, their instances terminated).
func cleanUpNodePoolChapter(ctx context.Context, c client.Client) error {
	deployment := builders.Deployment(builders.DeploymentOptions{Name: inflate, Namespace: sandbox.Namespace})
	if err := c.Delete(ctx, deployment, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting deployment %s, %w", inflate, err)
	}
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	return sandbox.RemoveNodePoolExample(ctx, c)
}
