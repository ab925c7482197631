package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
	"karpenter.sh/karpenter/test/sandbox"
	"karpenter.sh/karpenter/test/scale/provisioning/workload"
)

// Each provisioning test has a Provisioner of its own, named after it, and its pods select it
// by karpenter.sh/provisioner-name: tests running at once never share nodes or limits.

func TestProvisionedPodsRunOnNodesThatSatisfyThem(t *testing.T) {
	t.Parallel()
	const name = "constraints"
	taint := corev1.Taint{Key: "e2e.karpenter.sh/dedicated", Value: name, Effect: corev1.TaintEffectNoSchedule}
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Labels: map[string]string{"e2e.karpenter.sh/team": name}, Taints: []corev1.Taint{taint}})
	pod := func(podName string, o builders.PodOptions) *corev1.Pod {
		o.Name, o.Namespace = name+"-"+podName, sandbox.Namespace
		o.NodeSelector = mergeLabels(o.NodeSelector, map[string]string{v1alpha5.ProvisionerNameLabelKey: name})
		o.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}
		if o.Requests == nil {
			o.Requests = builders.Resources("cpu", "1", "memory", "1Gi")
		}
		return builders.Pod(o)
	}
	spread := map[string]string{"app": name + "-spread"}
	anti := map[string]string{"app": name + "-anti"}
	selected := map[string]string{"app": name + "-selected"}
	pods := []*corev1.Pod{
		pod("selector", builders.PodOptions{Labels: selected, NodeSelector: map[string]string{corev1.LabelTopologyZone: "us-west-2b", "e2e.karpenter.sh/team": name}}),
		pod("affinity", builders.PodOptions{NodeRequirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.xlarge"}},
		}}),
		pod("affine", builders.PodOptions{PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, selected)}}),
		// Upstream's instance type labels, as its getting-started NodePool requires them.
		pod("category", builders.PodOptions{NodeRequirements: []corev1.NodeSelectorRequirement{
			{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"r"}},
			{Key: awsv1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}},
		}}),
	}
	for i := range 3 {
		pods = append(pods, pod(fmt.Sprintf("spread-%d", i), builders.PodOptions{Labels: spread,
			TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, spread)}}))
	}
	for i := range 2 {
		pods = append(pods, pod(fmt.Sprintf("anti-%d", i), builders.PodOptions{Labels: anti,
			PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, anti)}}))
	}
	createPods(t, pods...)
	placed := waitRunning(t, pods...)

	for podName, node := range placed {
		if node.Labels[v1alpha5.ProvisionerNameLabelKey] != name || node.Labels["e2e.karpenter.sh/team"] != name ||
			!slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
			t.Errorf("pod %s runs on node %s (labels %v, taints %v), not one its Provisioner launched", podName, node.Name, node.Labels, node.Spec.Taints)
		}
	}
	zone := func(podName string) string { return placed[name+"-"+podName].Labels[corev1.LabelTopologyZone] }
	if zone("selector") != "us-west-2b" {
		t.Errorf("the pod selecting us-west-2b runs in %s", zone("selector"))
	}
	if it := placed[name+"-affinity"].Labels[corev1.LabelInstanceTypeStable]; it != "c5.xlarge" {
		t.Errorf("the pod requiring c5.xlarge runs on %s", it)
	}
	if labels := placed[name+"-category"].Labels; labels[awsv1.LabelInstanceCategory] != "r" || !after(labels[awsv1.LabelInstanceGeneration], 5) ||
		!strings.HasPrefix(labels[corev1.LabelInstanceTypeStable], labels[awsv1.LabelInstanceFamily]+".") {
		t.Errorf("the pod requiring a category r instance of a generation after 5 runs on a node labelled %v", labels)
	}
	if zone("affine") != zone("selector") {
		t.Errorf("the pod with affinity to the selector pod's zone runs in %s, not %s", zone("affine"), zone("selector"))
	}
	if zones := []string{zone("spread-0"), zone("spread-1"), zone("spread-2")}; len(distinct(zones)) != 3 {
		t.Errorf("the pods spread over zones run in %v", zones)
	}
	if placed[name+"-anti-0"].Name == placed[name+"-anti-1"].Name {
		t.Errorf("both pods with hostname anti-affinity run on %s", placed[name+"-anti-0"].Name)
	}
}

func TestProvisionerLimitsStopLaunches(t *testing.T) {
	t.Parallel()
	const name = "limited"
	// One c5.xlarge (4 vCPUs) exhausts the limit; each pod needs a node of its own.
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Limits: builders.Resources("cpu", "4"), Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"c5.xlarge"}},
	}})
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("%s-%d", name, i), Namespace: sandbox.Namespace,
			NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", "3")}))
	}
	createPods(t, pods...)
	eventually.Holds(t, "the Provisioner reporting its limits exhausted", func() (bool, string, error) {
		p := &v1alpha5.Provisioner{}
		if err := stack.Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return false, "", err
		}
		ready := p.StatusConditions().GetCondition(apis.ConditionReady)
		warned, err := hasEvent(p.Name, provisioning.ReasonLimitsExhausted)
		if err != nil {
			return false, "", err
		}
		return ready != nil && ready.Reason == provisioning.ReasonLimitsExhausted && warned && len(liveInstances(name)) == 1,
			fmt.Sprintf("Ready %+v, LimitsExhausted event %t, instances %d", ready, warned, len(liveInstances(name))), nil
	}, eventually.Timeout(waitTimeout))
	running := 0
	for _, pod := range pods {
		current := &corev1.Pod{}
		if err := stack.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), current); err != nil {
			t.Fatal(err)
		}
		if current.Spec.NodeName != "" {
			running++
		}
	}
	if n := len(liveInstances(name)); n != 1 || running > 1 {
		t.Errorf("%d instances and %d pods placed under a limit of one node", n, running)
	}
}

func TestCapacityErrorInOneZoneFallsBackToAnother(t *testing.T) {
	t.Parallel()
	const name = "ice"
	// Spot is cheapest in the region's first zone, so the first pool tried is us-west-2a's. Only
	// this test's Provisioner launches spot: the fault touches no other test.
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeSpot}},
		{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-west-2a", "us-west-2b"}},
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
	}})
	fault, err := stack.Emulator.InjectFault(awsemulator.Fault{Kind: "capacity", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", CapacityType: "spot"})
	if err != nil {
		t.Fatal(err)
	}
	// Tests running beside this one inject faults of their own: count and remove only this one.
	t.Cleanup(func() { stack.Emulator.RemoveFault(fault) })
	pod := builders.Pod(builders.PodOptions{Name: name, Namespace: sandbox.Namespace,
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", "1")})
	createPods(t, pod)
	node := waitRunning(t, pod)[pod.Name]
	if zone := node.Labels[corev1.LabelTopologyZone]; zone != "us-west-2b" {
		t.Errorf("the pod runs in %s, want us-west-2b", zone)
	}
	if stack.Emulator.FaultHits(fault) == 0 {
		t.Error("us-west-2a was never tried")
	}
	if n := len(liveInstances(name)); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func TestPodsThatFitLaunchingNodesLaunchNothing(t *testing.T) {
	t.Parallel()
	const name = "fit"
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.xlarge"}},
	}})
	pod := func(podName string) *corev1.Pod {
		return builders.Pod(builders.PodOptions{Name: name + "-" + podName, Namespace: sandbox.Namespace,
			NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", "1")})
	}
	first, second, third := pod("first"), pod("second"), pod("third")
	createPods(t, first)
	// The second pod arrives while the node is launching (not Ready, so unschedulable), the third
	// once it runs: both fit the room already there.
	eventually.Holds(t, "a node launched for the first pod", func() (bool, string, error) {
		n := len(liveInstances(name))
		return n > 0, fmt.Sprintf("%d instances", n), nil
	}, eventually.Timeout(waitTimeout))
	createPods(t, second)
	waitRunning(t, first, second)
	createPods(t, third)
	placed := waitRunning(t, first, second, third)
	if placed[first.Name].Name != placed[second.Name].Name || placed[first.Name].Name != placed[third.Name].Name {
		t.Errorf("pods on nodes %s, %s and %s, want one", placed[first.Name].Name, placed[second.Name].Name, placed[third.Name].Name)
	}
	if n := len(liveInstances(name)); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func TestPodSelectingALabelNoProvisionerSetsIsNeverProvisionedFor(t *testing.T) {
	t.Parallel()
	pod := builders.Pod(builders.PodOptions{Name: "node-group-only", Namespace: sandbox.Namespace,
		NodeSelector: map[string]string{"e2e.karpenter.sh/pool": "a-node-group"}, Requests: builders.Resources("cpu", "1")})
	createPods(t, pod)
	eventually.Holds(t, "the pod told no Provisioner can take it", func() (bool, string, error) {
		warned, err := hasEvent(pod.Name, provisioning.ReasonUnprovisionable)
		return warned, "", err
	}, eventually.Timeout(waitTimeout))
	planned, err := hasEvent(pod.Name, provisioning.ReasonPlanned)
	if err != nil {
		t.Fatal(err)
	}
	current := &corev1.Pod{}
	if err := stack.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), current); err != nil {
		t.Fatal(err)
	}
	if planned || current.Spec.NodeName != "" {
		t.Errorf("a node was planned (%t) or bound (%q) for a pod no Provisioner can take", planned, current.Spec.NodeName)
	}
}

// TestControllerKilledMidBatchLaunchesExactlyTheNeededInstances runs before the parallel tests:
// it kills the controller.
func TestControllerKilledMidBatchLaunchesExactlyTheNeededInstances(t *testing.T) {
	const name, replicas = "crash", 5
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
	}})
	// One node per pod: hostname anti-affinity. The pods' zones alternate, so that the batch
	// launches in several calls (one for each zone's identical nodes).
	labels := map[string]string{"app": name}
	zones := []string{"us-west-2a", "us-west-2b", "us-west-2c"}
	var pods []*corev1.Pod
	for i := range replicas {
		pods = append(pods, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("%s-%d", name, i), Namespace: sandbox.Namespace, Labels: labels,
			NodeSelector:    map[string]string{v1alpha5.ProvisionerNameLabelKey: name, corev1.LabelTopologyZone: zones[i%len(zones)]},
			PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, labels)}, Requests: builders.Resources("cpu", "500m")}))
	}
	// Each CreateFleet call takes a second, so that the kill lands while the batch's launches
	// are in flight: some answered, some not, their Nodes not all created.
	slowLaunches, err := stack.Emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "CreateFleet", Kind: awsemulator.FaultLatency, Latency: awsemulator.Duration(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	createPods(t, pods...)
	eventually.Holds(t, "the batch's first CreateFleet call", func() (bool, string, error) {
		hits := stack.Emulator.FaultHits(slowLaunches)
		return hits > 0, fmt.Sprintf("fault hits %d", hits), nil
	}, eventually.Interval(20*time.Millisecond), eventually.Timeout(waitTimeout))
	stack.KillController()
	t.Logf("controller killed with %d CreateFleet calls of the batch in flight or answered", stack.Emulator.FaultHits(slowLaunches))
	stack.Emulator.RemoveFault(slowLaunches)
	if err := stack.StartController(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pods...)
	// An instance launched but left without a Node by the kill is terminated after the grace.
	eventually.Holds(t, "exactly one instance per pod, each with its Node", func() (bool, string, error) {
		return instancesMatchNodes(name, replicas)
	}, eventually.Timeout(waitTimeout))
}

// createProvisioner creates the Provisioner, once what a previous run of the test (-count) left
// of it is gone; when the test ends the Provisioner and its nodes are deleted, and their
// termination finalizer drains them and terminates their instances.
func createProvisioner(t *testing.T, o builders.ProvisionerOptions) {
	t.Helper()
	createProvisionerObject(t, builders.Provisioner(o))
}

// createProvisionerObject is createProvisioner of a Provisioner built elsewhere.
func createProvisionerObject(t *testing.T, p *v1alpha5.Provisioner) {
	t.Helper()
	ctx := context.Background()
	deleteProvisioner := func() error {
		if err := stack.Env.Client.Delete(ctx, p.DeepCopy()); client.IgnoreNotFound(err) != nil {
			return err
		}
		nodeList := &corev1.NodeList{}
		if err := stack.Env.Client.List(ctx, nodeList, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: p.Name}); err != nil {
			return err
		}
		for i := range nodeList.Items {
			if err := stack.Env.Client.Delete(ctx, &nodeList.Items[i]); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		return nil
	}
	eventually.Holds(t, "nothing left of provisioner "+p.Name, func() (bool, string, error) {
		if err := deleteProvisioner(); err != nil {
			return false, "", err
		}
		err := stack.Env.Client.Get(ctx, client.ObjectKeyFromObject(p), &v1alpha5.Provisioner{})
		if !apierrors.IsNotFound(err) {
			return false, "the Provisioner still exists", client.IgnoreNotFound(err)
		}
		return instancesMatchNodes(p.Name, 0)
	}, eventually.Timeout(waitTimeout))
	if err := stack.Env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteProvisioner(); err != nil {
			t.Error(err)
		}
	})
}

// createPods creates the pods and deletes them when the test ends.
func createPods(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		createObject(t, pod)
	}
}

// waitRunning waits until every pod runs on a Ready node and returns the nodes by pod name.
func waitRunning(t *testing.T, pods ...*corev1.Pod) map[string]*corev1.Node {
	t.Helper()
	placed := map[string]*corev1.Node{}
	eventually.Holds(t, fmt.Sprintf("%d pods Running", len(pods)), func() (bool, string, error) {
		var waiting []string
		for _, pod := range pods {
			current := &corev1.Pod{}
			if err := stack.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), current); err != nil {
				if apierrors.IsNotFound(err) {
					// Said, not returned: an error would leave the last message, from before it went.
					waiting = append(waiting, pod.Name+" gone (deleted, e.g. evicted by a NoExecute taint)")
					continue
				}
				return false, "", err
			}
			node := &corev1.Node{}
			if current.Status.Phase != corev1.PodRunning ||
				stack.Env.Client.Get(context.Background(), client.ObjectKey{Name: current.Spec.NodeName}, node) != nil || !nodes.IsReady(node) {
				waiting = append(waiting, fmt.Sprintf("%s %s on %q", pod.Name, current.Status.Phase, current.Spec.NodeName))
				continue
			}
			placed[pod.Name] = node
		}
		return len(waiting) == 0, strings.Join(waiting, ", "), nil
	}, eventually.Timeout(waitTimeout))
	return placed
}

// liveInstances are the EC2 instances the Provisioner launched that are not terminating.
func liveInstances(provisionerName string) []awsemulator.EC2Instance {
	return liveInstancesOn(stack, provisionerName)
}

// liveInstancesOn is liveInstances on a stack of the test's own.
func liveInstancesOn(stack *sandbox.Stack, provisionerName string) []awsemulator.EC2Instance {
	var out []awsemulator.EC2Instance
	for _, instance := range stack.Emulator.EC2Instances() {
		if instance.Tags[v1alpha5.ProvisionerNameLabelKey] == provisionerName && (instance.State == "pending" || instance.State == "running") {
			out = append(out, instance)
		}
	}
	return out
}

// instancesMatchNodes reports whether the Provisioner's live instances and its Nodes stand for
// the same want machines: no instance without its Node, no Node without its instance.
func instancesMatchNodes(provisionerName string, want int) (bool, string, error) {
	return instancesMatchNodesOn(stack, provisionerName, want)
}

// instancesMatchNodesOn is instancesMatchNodes on a stack of the test's own.
func instancesMatchNodesOn(stack *sandbox.Stack, provisionerName string, want int) (bool, string, error) {
	nodeList := &corev1.NodeList{}
	if err := stack.Env.Client.List(context.Background(), nodeList, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisionerName}); err != nil {
		return false, "", err
	}
	var withNodes, launched []string
	for _, node := range nodeList.Items {
		withNodes = append(withNodes, node.Spec.ProviderID)
	}
	for _, instance := range liveInstancesOn(stack, provisionerName) {
		launched = append(launched, instance.ProviderID)
	}
	slices.Sort(withNodes)
	slices.Sort(launched)
	return len(launched) == want && slices.Equal(withNodes, launched), fmt.Sprintf("live instances %v, nodes' %v", launched, withNodes), nil
}

// hasEvent reports whether the object named has had an Event for reason.
func hasEvent(objectName, reason string) (bool, error) {
	events := &corev1.EventList{}
	if err := stack.Env.Client.List(context.Background(), events, client.MatchingFields{"involvedObject.name": objectName, "reason": reason}); err != nil {
		return false, fmt.Errorf("listing events, %w", err)
	}
	return len(events.Items) > 0, nil
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

func distinct(values []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range values {
		out[v] = true
	}
	return out
}

// bindRuns numbers the runs of TestBindPodsRunsEveryPodWherePlanned (-count), whose workload's
// objects, volumes among them, are named after the run: those of the last run may still be
// going away.
var bindRuns atomic.Int32

// TestBindPodsRunsEveryPodWherePlanned runs before the parallel tests, whose nodes would
// otherwise take some of its pods. A batch of every constraint kind
// (test/scale/provisioning/workload's, 100 pods) runs on the nodes launched for it: each pod
// the controller bound (--bind-pods, the default) runs on the node launched for it,
// kube-scheduler binds the rest (those whose claim waits for a volume), and no pod has a node
// launched for it twice.
func TestBindPodsRunsEveryPodWherePlanned(t *testing.T) {
	w := workload.NewDiverse(fmt.Sprintf("bind%d", bindRuns.Add(1)), sandbox.Namespace, 100)
	for _, p := range w.Provisioners {
		createProvisionerObject(t, p)
	}
	for _, o := range w.Storage {
		createObject(t, o)
	}
	createPods(t, w.Pods...)
	placed := waitRunning(t, w.Pods...)

	var launches map[string][]workload.Launch
	eventually.Holds(t, "an Event for every pod the controller bound", func() (bool, string, error) {
		var err error
		if launches, err = workload.Launches(context.Background(), stack.Env.Client, sandbox.Namespace); err != nil {
			return false, "", err
		}
		scheduled, err := workload.Scheduled(context.Background(), stack.Env.Client, sandbox.Namespace)
		if err != nil {
			return false, "", err
		}
		var untold []string
		for _, pod := range w.Pods {
			if _, ok := scheduled[pod.Name]; !ok && !slices.ContainsFunc(launches[pod.Name], func(l workload.Launch) bool { return l.Bound }) {
				untold = append(untold, pod.Name)
			}
		}
		return len(untold) == 0, fmt.Sprintf("pods neither told they were bound nor scheduled by kube-scheduler: %v", untold), nil
	}, eventually.Timeout(waitTimeout))
	bound := 0
	for _, pod := range w.Pods {
		launched := 0
		for _, l := range launches[pod.Name] {
			if l.Launched {
				launched++
			}
			if l.Bound {
				bound++
				if on := placed[pod.Name].Name; on != l.Node {
					t.Errorf("pod %s was bound to %s and runs on %s", pod.Name, l.Node, on)
				}
			}
		}
		if launched > 1 {
			t.Errorf("pod %s had a node launched for it %d times: %v", pod.Name, launched, launches[pod.Name])
		}
	}
	if bound < len(w.Pods)/2 {
		t.Errorf("the controller bound %d of %d pods, want most", bound, len(w.Pods))
	}
	t.Logf("%d of %d pods bound by the controller, %d nodes launched", bound, len(w.Pods), len(liveInstances(w.Provisioners[0].Name))+len(liveInstances(w.Provisioners[1].Name)))
}

// after is whether a numeric label value is greater than n, as a Gt requirement reads it.
func after(value string, n int) bool {
	v, err := strconv.Atoi(value)
	return err == nil && v > n
}
