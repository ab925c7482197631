package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	nodeclaimdisruption "karpenter.sh/karpenter/pkg/controllers/nodeclaim/disruption"
	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	nodeclaimtermination "karpenter.sh/karpenter/pkg/controllers/nodeclaim/termination"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	pkgdisruption "karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/nodeclasses"

	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/pkg/test/watchcount"
)

const pollTimeout = 2 * time.Minute

// cluster is the test's control plane and cloud.
type cluster struct {
	env   *environment.Environment
	cloud *fake.InstanceProvider
}

// TestDisruption runs the NodePools' provisioning, lifecycle, termination and disruption on a
// real control plane: kube-scheduler and kube-controller-manager run the workloads, kwok plays the
// kubelets and the fake cloud holds the instances.
func TestDisruption(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	c := &cluster{env: env, cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{})}
	nodeclasses.Ready(t, env.Client, "default")
	operatortest.Start(t, env, operatortest.Options{
		CompleteNode: func(node *corev1.Node) {
			metav1.SetMetaDataAnnotation(&node.ObjectMeta, environment.KwokNodeAnnotation, "fake")
		},
		Controllers: controllers.Options{
			Enabled: []string{provisioning.Name, nodeclaimlifecycle.Name, nodeclaimtermination.Name, readiness.Name, termination.Name,
				nodeclaimdisruption.Name, disruption.Name},
			CloudProvider:             cloudprovider.NewRegistry(),
			InstanceProvider:          c.cloud,
			Clock:                     clock.RealClock{},
			BatchIdleDuration:         200 * time.Millisecond,
			BatchMaxDuration:          2 * time.Second,
			DisruptionPeriod:          200 * time.Millisecond,
			DisruptionValidationDelay: 500 * time.Millisecond,
		}})
	t.Cleanup(func() {
		if t.Failed() {
			c.dump(t)
		}
	})
	t.Run("a NodePool's template edit replaces every node, one at a time, no pod lost", c.driftWithinBudget)
	t.Run("an empty node goes after consolidateAfter", c.emptiness)
	t.Run("a do-not-disrupt pod holds its drifted node, told why", c.doNotDisrupt)
	t.Run("an underutilized node is replaced by a cheaper one, launched first", c.underutilized)
	t.Run("a scheduled change replaces its node first, whatever the budgets and do-not-disrupt say", c.scheduledChange)
	t.Run("a steady workload is left alone for ten passes", c.steady)
}

// steady: two pods, each alone on the one type its NodePool allows (on demand) and too large to
// share a node, have nothing to gain from consolidation: once each NodeClaim is told so, ten passes go by
// without a launch, a node disrupted (asserted from a watch) or a NodeClaim replaced.
func (c *cluster) steady(t *testing.T) {
	c.nodePool(t, "steady", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1s")
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	})
	c.deploy(t, "steady", 2)
	nodes := c.runningOn(t, "steady", 2, nil)
	mostDisrupted := watchcount.Disrupted(t, c.env.Config, "steady")
	launches := len(c.cloud.CreateCalls())
	claims := make([]string, 0, len(nodes))
	for _, node := range nodes {
		claim := c.nodeClaimOf(t, node)
		claims = append(claims, claim)
		events.Wait(t, c.env.Client, claim, pkgdisruption.ConsolidationNotCheaper, "", eventually.Timeout(pollTimeout))
	}
	// The passes run every 200 ms: ten of them take two seconds.
	decided := time.Now()
	eventually.Holds(t, "ten passes after the decision", func() (bool, string, error) {
		return time.Since(decided) >= 10*200*time.Millisecond, "", nil
	}, eventually.Timeout(pollTimeout))
	if on := c.runningOn(t, "steady", 2, nil); !slices.Equal(on, nodes) {
		t.Errorf("the pods moved from %v to %v", nodes, on)
	}
	for i, node := range nodes {
		if claim := c.nodeClaimOf(t, node); claim != claims[i] {
			t.Errorf("node %s's nodeclaim is %s, was %s", node, claim, claims[i])
		}
	}
	if n := len(c.cloud.CreateCalls()) - launches; n != 0 {
		t.Errorf("%d launches over the passes, want none", n)
	}
	if most := mostDisrupted(); most != 0 {
		t.Errorf("%d nodes disrupted at once, want none", most)
	}
}

// scheduledChange: a scheduled change two weeks ahead recorded on a node's NodeClaim, as the
// interruption controller records it, replaces the node first — its replacement launched and
// its pod running there — though its NodePool's budget is zero and its pod is do-not-disrupt.
func (c *cluster) scheduledChange(t *testing.T) {
	c.nodePool(t, "retiring", func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
	})
	c.deploy(t, "retiring", 1, func(o *builders.PodOptions) {
		o.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	})
	before := c.runningOn(t, "retiring", 1, nil)
	claim := c.nodeClaimOf(t, before[0])
	nc := &v1.NodeClaim{}
	if err := c.env.Client.Get(t.Context(), client.ObjectKey{Name: claim}, nc); err != nil {
		t.Fatal(err)
	}
	stored := nc.DeepCopy()
	metav1.SetMetaDataAnnotation(&nc.ObjectMeta, v1.InterruptionReasonAnnotationKey, "scheduled_change")
	metav1.SetMetaDataAnnotation(&nc.ObjectMeta, v1.InterruptionDeadlineAnnotationKey, time.Now().Add(14*24*time.Hour).UTC().Format(time.RFC3339))
	if err := c.env.Client.Patch(t.Context(), nc, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	after := c.runningOn(t, "retiring", 1, func(node *corev1.Node) bool { return node.Name != before[0] })
	c.nodeClaimsGone(t, "retiring", before)
	events.Wait(t, c.env.Client, claim, disruption.ReasonReplacing, "scheduled_change", eventually.Timeout(pollTimeout))
	replacement := &v1.NodeClaim{}
	if err := c.env.Client.Get(t.Context(), client.ObjectKey{Name: c.nodeClaimOf(t, after[0])}, replacement); err != nil {
		t.Fatal(err)
	}
	if replacement.Annotations[v1alpha5.ReplacesAnnotationKey] != before[0] {
		t.Errorf("the pod's new node's nodeclaim is annotated %v, want it launched to replace %s", replacement.Annotations, before[0])
	}
}

// driftWithinBudget: a label added to the template drifts the NodePool's three nodes; each is
// replaced (its replacement launched and initialized before it is deleted), never more than the
// budget's one at a time, and the deployment never has fewer than two of its three pods running.
func (c *cluster) driftWithinBudget(t *testing.T) {
	np := c.nodePool(t, "drift", func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
	})
	c.deploy(t, "drift", 3)
	before := c.runningOn(t, "drift", 3, nil)
	mostDisrupted := watchcount.Disrupted(t, c.env.Config, "drift")
	fewestRunning := watchcount.Available(t, c.env.Config, metav1.NamespaceDefault, "app=drift", 3)

	c.update(t, np, func(np *v1.NodePool) { np.Spec.Template.Labels["generation"] = "2" })
	after := c.runningOn(t, "drift", 3, func(node *corev1.Node) bool { return node.Labels["generation"] == "2" })
	for _, node := range after {
		if slices.Contains(before, node) {
			t.Errorf("pod still on node %s of before the drift", node)
		}
	}
	c.nodeClaimsGone(t, "drift", before)
	if most := mostDisrupted(); most != 1 {
		t.Errorf("at most %d nodes disrupted at once, want 1 (the budget)", most)
	}
	if fewest := fewestRunning(); fewest < 2 {
		t.Errorf("as few as %d of 3 pods running at once, want at least 2", fewest)
	}
}

// emptiness: a node whose pods all left goes once consolidateAfter has passed.
func (c *cluster) emptiness(t *testing.T) {
	c.nodePool(t, "empty", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("2s")
	})
	deployment := c.deploy(t, "empty", 1)
	nodes := c.runningOn(t, "empty", 1, nil)
	stored := deployment.DeepCopy()
	deployment.Spec.Replicas = new(int32)
	if err := c.env.Client.Patch(t.Context(), deployment, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	c.nodeClaimsGone(t, "empty", nodes)
}

// doNotDisrupt: a pod annotated karpenter.sh/do-not-disrupt keeps its drifted node, and the
// NodeClaim is told why.
func (c *cluster) doNotDisrupt(t *testing.T) {
	np := c.nodePool(t, "held", nil)
	c.deploy(t, "held", 1, func(o *builders.PodOptions) {
		o.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	})
	nodes := c.runningOn(t, "held", 1, nil)
	c.update(t, np, func(np *v1.NodePool) { np.Spec.Template.Labels["generation"] = "2" })
	claim := c.nodeClaimOf(t, nodes[0])
	eventually.Holds(t, "nodeclaim "+claim+" Drifted", func() (bool, string, error) {
		nc := &v1.NodeClaim{}
		if err := c.env.Client.Get(t.Context(), client.ObjectKey{Name: claim}, nc); err != nil {
			return false, "", err
		}
		drifted := nc.Condition(v1.ConditionTypeDrifted)
		return drifted != nil && drifted.Reason == pkgdisruption.ReasonNodePoolDrifted, fmt.Sprintf("%+v", drifted), nil
	}, eventually.Timeout(pollTimeout))
	events.Wait(t, c.env.Client, claim, pkgdisruption.BlockedDoNotDisruptPod, v1.DoNotDisruptAnnotationKey, eventually.Timeout(pollTimeout))
	if on := c.runningOn(t, "held", 1, nil); on[0] != nodes[0] {
		t.Errorf("the held pod moved from %s to %s", nodes[0], on[0])
	}
}

// underutilized: a pod alone on a c5.xlarge, its NodePool widened to c5.large (half the price),
// moves to a c5.large launched for it before the c5.xlarge goes.
func (c *cluster) underutilized(t *testing.T) {
	np := c.nodePool(t, "under", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.xlarge"}},
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1s")
	})
	c.deploy(t, "under", 1)
	before := c.runningOn(t, "under", 1, nil)
	claim := c.nodeClaimOf(t, before[0])
	mostDisrupted := watchcount.Disrupted(t, c.env.Config, "under")
	c.update(t, np, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{"c5.large", "c5.xlarge"}
	})
	c.runningOn(t, "under", 1, func(node *corev1.Node) bool { return node.Labels[corev1.LabelInstanceTypeStable] == "c5.large" })
	c.nodeClaimsGone(t, "under", before)
	events.Wait(t, c.env.Client, claim, disruption.ReasonReplacing, "underutilized", eventually.Timeout(pollTimeout))
	if most := mostDisrupted(); most != 1 {
		t.Errorf("at most %d nodes disrupted at once, want 1", most)
	}
}

// nodePool creates a NodePool of c5.large nodes labelled suite=<name>, which never consolidates
// unless mutate says otherwise.
func (c *cluster) nodePool(t *testing.T, name string, mutate func(*v1.NodePool)) *v1.NodePool {
	t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{
			NodeClaimTemplateObjectMeta: v1.NodeClaimTemplateObjectMeta{Labels: map[string]v1.LabelValue{"suite": v1.LabelValue(name)}},
			Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}}},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			},
		},
		Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("Never"), Budgets: []v1.Budget{{Nodes: "10%"}}},
	}}
	if mutate != nil {
		mutate(np)
	}
	if err := c.env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	return np
}

func (c *cluster) update(t *testing.T, np *v1.NodePool, change func(*v1.NodePool)) {
	t.Helper()
	if err := c.env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	stored := np.DeepCopy()
	change(np)
	if err := c.env.Client.Patch(t.Context(), np, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

// deploy creates a deployment of pods of 1500m, one per c5.large, on the NodePool's nodes.
func (c *cluster) deploy(t *testing.T, name string, replicas int32, mutate ...func(*builders.PodOptions)) *appsv1.Deployment {
	t.Helper()
	options := builders.PodOptions{Labels: map[string]string{"app": name}, Requests: builders.Resources("cpu", "1500m"), NodeSelector: map[string]string{"suite": name}}
	for _, m := range mutate {
		m(&options)
	}
	d := builders.Deployment(builders.DeploymentOptions{Name: name, Replicas: replicas, Pod: options})
	if err := c.env.Client.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// runningOn waits for n pods of the app Running, not being deleted, on nodes that pass the
// check (any when nil), and returns their nodes, sorted.
func (c *cluster) runningOn(t *testing.T, app string, n int, check func(*corev1.Node) bool) []string {
	t.Helper()
	var on []string
	eventually.Holds(t, fmt.Sprintf("%d pods of %s running", n, app), func() (bool, string, error) {
		var list corev1.PodList
		if err := c.env.Client.List(t.Context(), &list, client.MatchingLabels{"app": app}); err != nil {
			return false, "", err
		}
		on = nil
		for _, pod := range list.Items {
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			node := &corev1.Node{}
			if err := c.env.Client.Get(t.Context(), client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			if check == nil || check(node) {
				on = append(on, node.Name)
			}
		}
		return len(on) == n && len(list.Items) == n, fmt.Sprintf("%d of %d pods on %v", len(on), len(list.Items), on), nil
	}, eventually.Timeout(pollTimeout))
	slices.Sort(on)
	return on
}

// nodeClaimOf is the NodeClaim of the node.
func (c *cluster) nodeClaimOf(t *testing.T, node string) string {
	t.Helper()
	var list v1.NodeClaimList
	if err := c.env.Client.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	for _, nc := range list.Items {
		if nc.Status.NodeName == node {
			return nc.Name
		}
	}
	t.Fatalf("no nodeclaim of node %s", node)
	return ""
}

// nodeClaimsGone waits for the NodePool's NodeClaims of the nodes to be gone, and their nodes.
func (c *cluster) nodeClaimsGone(t *testing.T, nodePool string, nodes []string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("the nodeclaims of %v gone", nodes), func() (bool, string, error) {
		var list v1.NodeClaimList
		if err := c.env.Client.List(t.Context(), &list, client.MatchingLabels{v1.NodePoolLabelKey: nodePool}); err != nil {
			return false, "", err
		}
		for _, nc := range list.Items {
			if slices.Contains(nodes, nc.Status.NodeName) {
				return false, "nodeclaim " + nc.Name + " remains", nil
			}
		}
		var nodeList corev1.NodeList
		if err := c.env.Client.List(t.Context(), &nodeList); err != nil {
			return false, "", err
		}
		for _, node := range nodeList.Items {
			if slices.Contains(nodes, node.Name) {
				return false, "node " + node.Name + " remains", nil
			}
		}
		return true, "", nil
	}, eventually.Timeout(pollTimeout))
}

// dump logs the cluster as a failed test left it.
func (c *cluster) dump(t *testing.T) {
	ctx := context.WithoutCancel(t.Context())
	var claims v1.NodeClaimList
	_ = c.env.Client.List(ctx, &claims)
	for _, nc := range claims.Items {
		t.Logf("nodeclaim %s node %q deleting %v annotations %v conditions %+v", nc.Name, nc.Status.NodeName, nc.DeletionTimestamp != nil, nc.Annotations, nc.Status.Conditions)
	}
	var nodes corev1.NodeList
	_ = c.env.Client.List(ctx, &nodes)
	for _, node := range nodes.Items {
		t.Logf("node %s labels %v taints %v deleting %v", node.Name, node.Labels, node.Spec.Taints, node.DeletionTimestamp != nil)
	}
	var pods corev1.PodList
	_ = c.env.Client.List(ctx, &pods)
	for _, pod := range pods.Items {
		t.Logf("pod %s %s on %q", pod.Name, pod.Status.Phase, pod.Spec.NodeName)
	}
	var events corev1.EventList
	_ = c.env.Client.List(ctx, &events)
	for _, e := range events.Items {
		t.Logf("event on %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
}
