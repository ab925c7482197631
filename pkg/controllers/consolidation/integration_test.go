package consolidation_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	disruptioncontroller "karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/disruption"

	"karpenter.sh/karpenter/pkg/nodeclaims"

	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/counters"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// fleet is the test's cluster and cloud, with the steps the test takes on them.
type fleet struct {
	env   *environment.Environment
	cloud *fake.InstanceProvider
}

// TestConsolidation runs the reallocator with the termination and readiness controllers on a
// real control plane: kube-scheduler and kube-controller-manager run the workloads, kwok plays
// the kubelets and the fake cloud holds the instances.
func TestConsolidation(t *testing.T) {
	f := newFleet(t)
	env, cloud, ctx := f.env, f.cloud, t.Context()
	// Each provisioner is a pool of its own, of one capacity type.
	for name, capacityType := range map[string]string{
		"general": v1alpha5.CapacityTypeOnDemand, "replaced": v1alpha5.CapacityTypeOnDemand, "guarded": v1alpha5.CapacityTypeOnDemand,
		"spot": v1alpha5.CapacityTypeSpot, "narrow": v1alpha5.CapacityTypeSpot,
	} {
		f.provisioner(t, name, capacityType)
	}

	// The cluster is set up before the operator starts, so that no pass sees it half built.
	// The underused node is the only one of its pool when web is placed; db is pinned to its node.
	underused, underusedInstance := f.launch(t, "underused", "general", "m5.xlarge")
	f.deploy(t, "web", "general", "1", nil)
	f.waitRunning(t, "web", underused.Name)
	pinned, _ := f.launch(t, "pinned", "general", "m5.xlarge")
	f.deploy(t, "db", "general", "2", func(o *builders.PodOptions) { o.NodeSelector[corev1.LabelHostname] = pinned.Name })
	f.waitRunning(t, "db", pinned.Name)
	oversized, oversizedInstance := f.launch(t, "oversized", "replaced", "m5.2xlarge")
	f.deploy(t, "batch", "replaced", "1", nil)
	f.waitRunning(t, "batch", oversized.Name)
	// A spot node is replaced by spot among the 6 cheaper spot types that fit its pod; the
	// pod of narrow fits 3 cheaper spot types only, fewer than the 5 the fleet asks for.
	spotty, spottyInstance := f.launch(t, "spotty", "spot", "m5.2xlarge")
	f.deploy(t, "spotty", "spot", "1", nil)
	f.waitRunning(t, "spotty", spotty.Name)
	narrow, _ := f.launch(t, "narrow", "narrow", "m5.xlarge")
	f.deploy(t, "narrow", "narrow", "1500m", func(o *builders.PodOptions) { o.Requests = builders.Resources("cpu", "1500m", "memory", "6Gi") })
	f.waitRunning(t, "narrow", narrow.Name)
	// A budget of minAvailable 1 over one pod allows no disruption: its oversized node stays.
	protected, _ := f.launch(t, "protected", "guarded", "m5.xlarge")
	f.deploy(t, "guarded", "guarded", "1", nil)
	if err := env.Client.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: metav1.NamespaceDefault},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}); err != nil {
		t.Fatal(err)
	}
	f.waitRunning(t, "guarded", protected.Name)
	guardedPods := &corev1.PodList{}
	if err := env.Client.List(ctx, guardedPods, client.MatchingLabels{"app": "guarded"}); err != nil || len(guardedPods.Items) != 1 {
		t.Fatalf("the guarded deployment's pods: %d, %v", len(guardedPods.Items), err)
	}

	launchedBefore := len(cloud.CreateCalls())
	createdLabels := map[string]string{"reason": "underutilized", "nodepool": "replaced"}
	created := counters.MarkNow(t, "karpenter_nodeclaims_created_total", createdLabels)
	disruptedLabels := map[string]string{"reason": "underutilized", "nodepool": "replaced", "capacity_type": v1alpha5.CapacityTypeOnDemand}
	disrupted := counters.MarkNow(t, "karpenter_nodeclaims_disrupted_total", disruptedLabels)

	stop := f.start(t)
	var replacement *corev1.Node
	t.Run("a cheaper replacement is launched for an oversized node, which stays until it is Ready", func(t *testing.T) {
		replacement = f.replacementOf(t, oversized)
		expectEvent(t, env, oversized.Name, consolidation.ReasonReplacing)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(oversized), &corev1.Node{}); err != nil {
			t.Fatalf("the oversized node went before its replacement was Ready: %v", err)
		}
		it := instanceType(replacement.Labels[corev1.LabelInstanceTypeStable])
		if onDemandPrice(it) >= onDemandPrice(instanceType("m5.2xlarge")) {
			t.Errorf("replaced m5.2xlarge with %s, no cheaper", it.Name)
		}
	})
	if replacement == nil {
		t.FailNow()
	}
	// The controller dies before the replacement is Ready, which it becomes while none runs: a
	// new one knows only what the cluster holds, and runs for the rest of the test.
	stop()
	f.markReady(t, replacement)
	f.start(t)

	t.Run("across a crash, the oversized node goes once its replacement is Ready", func(t *testing.T) {
		f.gone(t, oversized, oversizedInstance)
		f.waitBound(t, "batch", replacement.Name)
		if launches := launchesFor(cloud, launchedBefore, "replaced"); launches != 1 {
			t.Errorf("consolidation launched %d instances for provisioner replaced, want 1", launches)
		}
		// Upstream's families count the replacement, created once across the crash, and the
		// oversized node deleted.
		if got := created.Increase(); got != 1 {
			t.Errorf("karpenter_nodeclaims_created_total %v grew by %v, want 1", createdLabels, got)
		}
		if got := disrupted.Increase(); got != 1 {
			t.Errorf("karpenter_nodeclaims_disrupted_total %v grew by %v, want 1", disruptedLabels, got)
		}
	})

	t.Run("a node whose pods fit elsewhere is deleted, its pods move", func(t *testing.T) {
		f.gone(t, underused, underusedInstance)
		f.waitRunning(t, "web", pinned.Name)
		f.waitRunning(t, "db", pinned.Name)
		expectEvent(t, env, pinned.Name, disruption.ConsolidationPodsDoNotFit)
		expectEvent(t, env, underused.Name, consolidation.ReasonDeleted)
	})

	t.Run("a spot node is replaced by spot only when enough cheaper spot types remain", func(t *testing.T) {
		replacement := f.replacementOf(t, spotty)
		if got := replacement.Labels[v1alpha5.CapacityTypeLabelKey]; got != v1alpha5.CapacityTypeSpot {
			t.Errorf("a spot node was replaced by %s", got)
		}
		f.markReady(t, replacement)
		f.gone(t, spotty, spottyInstance)
		f.waitBound(t, "spotty", replacement.Name)
		expectEvent(t, env, narrow.Name, disruption.ConsolidationSpotNotDiverse)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(narrow), &corev1.Node{}); err != nil {
			t.Errorf("node narrow: %v", err)
		}
		if launches := launchesFor(cloud, launchedBefore, "narrow"); launches != 0 {
			t.Errorf("consolidation launched %d instances for provisioner narrow, want none", launches)
		}
	})

	t.Run("a pod whose PDB allows no disruption keeps its node", func(t *testing.T) {
		expectEvent(t, env, protected.Name, consolidation.ReasonPDB)
		pods := &corev1.PodList{}
		if err := env.Client.List(ctx, pods, client.MatchingLabels{"app": "guarded"}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 || pods.Items[0].UID != guardedPods.Items[0].UID || pods.Items[0].DeletionTimestamp != nil {
			t.Errorf("the guarded pod was disrupted: %d pods now", len(pods.Items))
		}
		if launches := launchesFor(cloud, launchedBefore, "guarded"); launches != 0 {
			t.Errorf("consolidation launched %d instances for provisioner guarded, want none", launches)
		}
		// Nothing is in flight: every instance has its node, every node its instance.
		nodeList := &corev1.NodeList{}
		if err := env.Client.List(ctx, nodeList); err != nil {
			t.Fatal(err)
		}
		instances, err := cloud.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var withNodes, launched []string
		for _, n := range nodeList.Items {
			withNodes = append(withNodes, n.Spec.ProviderID)
		}
		for _, instance := range instances {
			launched = append(launched, instance.ProviderID)
		}
		slices.Sort(withNodes)
		slices.Sort(launched)
		if !slices.Equal(withNodes, launched) {
			t.Errorf("instances %v, nodes' %v", launched, withNodes)
		}
	})
}

// newFleet starts a control plane with kube-scheduler, kube-controller-manager and kwok, and a
// fake cloud.
func newFleet(t *testing.T) *fleet {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	return &fleet{env: env, cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{})}
}

// provisioner creates a Provisioner of amd64 nodes of one capacity type, labelled pool=<name>,
// that consolidates with a budget of all its nodes.
func (f *fleet) provisioner(t *testing.T, name, capacityType string) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: name, Labels: map[string]string{"pool": name}, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{capacityType}},
		{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
	}})
	p.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true), Budget: ptr.To(intstr.FromString("100%"))}
	if err := f.env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// launch makes a Ready node of the instance type as the provisioner launched it, of the
// capacity type the provisioner allows.
func (f *fleet) launch(t *testing.T, name, provisioner, typeName string) (*corev1.Node, *cloudprovider.Instance) {
	ctx := t.Context()
	it := instanceType(typeName)
	capacityType := v1alpha5.CapacityTypeOnDemand
	if provisioner == "spot" || provisioner == "narrow" {
		capacityType = v1alpha5.CapacityTypeSpot
	}
	offering := it.Offerings[slices.IndexFunc(it.Offerings, func(o cloudprovider.Offering) bool { return o.CapacityType == capacityType })]
	launched, err := f.cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: provisioner,
		Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: offering}}})
	if err != nil {
		t.Fatal(err)
	}
	instance := launched[0]
	n := environment.KwokNode(name, map[string]string{
		v1alpha5.ProvisionerNameLabelKey: provisioner, "pool": provisioner, corev1.LabelInstanceTypeStable: typeName,
		corev1.LabelTopologyZone: instance.Zone, v1alpha5.CapacityTypeLabelKey: instance.CapacityType,
	}, it.Allocatable())
	n.Spec.ProviderID = instance.ProviderID
	n.Finalizers = []string{v1alpha5.TerminationFinalizer}
	if err := f.env.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "node "+name+" is Ready", func() (bool, string, error) {
		err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(n), n)
		return err == nil && nodes.IsReady(n), "", err
	})
	return n, instance
}

func (f *fleet) deploy(t *testing.T, name, pool, cpu string, mutate func(*builders.PodOptions)) {
	ctx := t.Context()
	options := builders.PodOptions{Requests: builders.Resources("cpu", cpu, "memory", "1Gi"), NodeSelector: map[string]string{"pool": pool}}
	if mutate != nil {
		mutate(&options)
	}
	if err := f.env.Client.Create(ctx, builders.Deployment(builders.DeploymentOptions{Name: name, Replicas: 1, Pod: options})); err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) running(t *testing.T, app string) (string, bool, error) {
	ctx := t.Context()
	list := &corev1.PodList{}
	if err := f.env.Client.List(ctx, list, client.MatchingLabels{"app": app}); err != nil {
		return "", false, err
	}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p.Spec.NodeName, true, nil
		}
	}
	return "", false, nil
}

func (f *fleet) waitRunning(t *testing.T, app, node string) {
	eventually.Holds(t, app+" runs on "+node, func() (bool, string, error) {
		on, ok, err := f.running(t, app)
		return ok && (node == "" || on == node), "on " + on, err
	})
}

func (f *fleet) gone(t *testing.T, n *corev1.Node, instance *cloudprovider.Instance) {
	ctx := t.Context()
	eventually.Holds(t, "node "+n.Name+" is deleted and its instance terminated", func() (bool, string, error) {
		err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(n), &corev1.Node{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		return apierrors.IsNotFound(err) && slices.Contains(f.cloud.DeleteCalls(), instance.ProviderID), "", nil
	})
}

func (f *fleet) start(t *testing.T) (stop func()) {
	return operatortest.Start(t, f.env, operatortest.Options{Controllers: controllers.Options{
		Enabled:                 []string{disruptioncontroller.Name, termination.Name, readiness.Name, nodeclaimlifecycle.Name},
		CloudProvider:           cloudprovider.NewRegistry(),
		InstanceProvider:        f.cloud,
		Clock:                   clock.RealClock{},
		ConsolidationPeriod:     200 * time.Millisecond,
		ConsolidationMinNodeAge: time.Millisecond,
		SpotToSpotMinTypes:      5,
	}})
}

// waitBound waits for the app's one pod to be bound to a node the test marked Ready: no
// kubelet runs it there.
func (f *fleet) waitBound(t *testing.T, app, node string) {
	ctx := t.Context()
	eventually.Holds(t, "the "+app+" pod is bound to "+node, func() (bool, string, error) {
		list := &corev1.PodList{}
		if err := f.env.Client.List(ctx, list, client.MatchingLabels{"app": app}); err != nil {
			return false, "", err
		}
		return len(list.Items) == 1 && list.Items[0].Spec.NodeName == node, fmt.Sprintf("%d pods", len(list.Items)), nil
	})
}

// replacementOf waits for the node launched for the provisioner beside old, registered: its
// kubelet registers it, and the NodeClaim lifecycle syncs the NodeClaim's annotations onto it.
func (f *fleet) replacementOf(t *testing.T, old *corev1.Node) *corev1.Node {
	ctx := t.Context()
	var replacement corev1.Node
	provisioner := old.Labels[v1alpha5.ProvisionerNameLabelKey]
	eventually.Holds(t, "a replacement node is launched for provisioner "+provisioner, func() (bool, string, error) {
		list := &corev1.NodeList{}
		if err := f.env.Client.List(ctx, list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisioner}); err != nil {
			return false, "", err
		}
		for _, n := range list.Items {
			if n.Name != old.Name && nodeclaims.Registered(&n) {
				replacement = n
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d nodes", len(list.Items)), nil
	})
	if got := replacement.Annotations[v1alpha5.ReplacesAnnotationKey]; got != old.Name {
		t.Errorf("the replacement is annotated %s=%q, want %q", v1alpha5.ReplacesAnnotationKey, got, old.Name)
	}
	return &replacement
}

// cordon marks the node unschedulable, or schedulable again.
func (f *fleet) cordon(t *testing.T, n *corev1.Node, unschedulable bool) {
	stored := n.DeepCopy()
	n.Spec.Unschedulable = unschedulable
	if err := f.env.Client.Patch(t.Context(), n, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

// markReady plays the kubelet of a launched instance (kwok takes only nodes created for
// it): it reports the node's allocatable and Ready.
func (f *fleet) markReady(t *testing.T, n *corev1.Node) {
	ctx := t.Context()
	it := instanceType(n.Labels[corev1.LabelInstanceTypeStable])
	stored := n.DeepCopy()
	n.Status.Capacity, n.Status.Allocatable = it.Capacity, it.Allocatable()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := f.env.Client.Status().Patch(ctx, n, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

// launchesFor counts the launches for the provisioner since the first ones.
func launchesFor(cloud *fake.InstanceProvider, since int, provisioner string) int {
	n := 0
	for _, request := range cloud.CreateCalls()[since:] {
		if request.ProvisionerName == provisioner {
			n++
		}
	}
	return n
}

// onDemandPrice is the on-demand price of the instance type in its first zone.
func onDemandPrice(it *cloudprovider.InstanceType) float64 {
	for _, o := range it.Offerings {
		if o.CapacityType == v1alpha5.CapacityTypeOnDemand {
			return o.Price
		}
	}
	return 0
}

func expectEvent(t *testing.T, env *environment.Environment, node, reason string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("a %s event on node %s", reason, node), func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(t.Context(), events); err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node && e.Reason == reason
		}), "", nil
	})
}

// TestConsolidationIntoFewerNodes: three nodes whose pods cannot all share one (two of them
// keep apart, hostname anti-affinity) are replaced by two cheaper nodes, launched first; the
// three go once both are Ready. Before replacements of several nodes, the pass could only
// replace two of them by one, leaving the third.
func TestConsolidationIntoFewerNodes(t *testing.T) {
	f := newFleet(t)
	env, cloud, ctx := f.env, f.cloud, t.Context()
	f.provisioner(t, "merged", v1alpha5.CapacityTypeOnDemand)
	// Each pod lands on its own node, the only one not cordoned when it is placed: the cluster
	// is set up before the operator starts. The nodes are named so that the plain pod's comes
	// first among equals (SortRemovals).
	var old []*corev1.Node
	var instances []*cloudprovider.Instance
	for _, app := range []string{"plain", "apart-a", "apart-b"} {
		for _, n := range old {
			f.cordon(t, n, true)
		}
		n, instance := f.launch(t, "merged-"+app, "merged", "m5.xlarge")
		old, instances = append(old, n), append(instances, instance)
		f.deploy(t, app, "merged", "300m", func(o *builders.PodOptions) {
			if app != "plain" {
				o.Labels = map[string]string{"app": app, "group": "apart"}
				o.PodAntiAffinity = []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"group": "apart"})}
			}
		})
		f.waitRunning(t, app, n.Name)
	}
	for _, n := range old {
		f.cordon(t, n, false)
	}
	launchedBefore := len(cloud.CreateCalls())
	f.start(t)

	var replacements []corev1.Node
	eventually.Holds(t, "two replacements are registered for the three nodes", func() (bool, string, error) {
		list := &corev1.NodeList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: "merged"}); err != nil {
			return false, "", err
		}
		replacements = slices.DeleteFunc(list.Items, func(n corev1.Node) bool { return strings.HasPrefix(n.Name, "merged-") || !nodeclaims.Registered(&n) })
		return len(replacements) == 2, fmt.Sprintf("%d registered", len(replacements)), nil
	})
	want := "merged-apart-a,merged-apart-b,merged-plain"
	for i := range replacements {
		got := strings.Split(replacements[i].Annotations[v1alpha5.ReplacesAnnotationKey], ",")
		slices.Sort(got)
		if strings.Join(got, ",") != want {
			t.Errorf("replacement %s is annotated %s=%v, want %s", replacements[i].Name, v1alpha5.ReplacesAnnotationKey, got, want)
		}
	}
	for _, n := range old {
		expectEvent(t, env, n.Name, consolidation.ReasonReplacing)
	}
	// One Ready is not enough: the nodes stay until both are, however many passes decide.
	passes := counters.MarkNow(t, "karpenter_consolidation_pass_duration_seconds", nil)
	f.markReady(t, &replacements[0])
	eventually.Holds(t, "three passes decide with one replacement Ready", func() (bool, string, error) {
		return passes.Increase() >= 3, fmt.Sprintf("%v passes", passes.Increase()), nil
	})
	for _, n := range old {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(n), &corev1.Node{}); err != nil {
			t.Fatalf("node %s went before both replacements were Ready: %v", n.Name, err)
		}
	}
	f.markReady(t, &replacements[1])
	for i, n := range old {
		f.gone(t, n, instances[i])
	}
	if launches := launchesFor(cloud, launchedBefore, "merged"); launches != 2 {
		t.Errorf("consolidation launched %d instances, want 2", launches)
	}
	// No kubelet runs pods on the replacements, which the test marked Ready: they are bound.
	eventually.Holds(t, "the apart pods are bound to different replacements", func() (bool, string, error) {
		list := &corev1.PodList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{"group": "apart"}); err != nil {
			return false, "", err
		}
		on := map[string]bool{}
		for _, pod := range list.Items {
			if pod.DeletionTimestamp == nil && pod.Spec.NodeName != "" && !strings.HasPrefix(pod.Spec.NodeName, "merged-") {
				on[pod.Spec.NodeName] = true
			}
		}
		return len(on) == 2, fmt.Sprintf("%d pods, on %v", len(list.Items), on), nil
	})
}
