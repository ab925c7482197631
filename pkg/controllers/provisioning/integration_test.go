package provisioning_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpenterapis "karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

const pollTimeout = 90 * time.Second

// suite is one control plane (apiserver, kube-scheduler, kwok), the operator running the
// provisioning controller against the fake cloud, and a joiner playing the kubelet of the
// nodes it launches. Each subtest uses its own Provisioner and selects it by a label of its
// own, so that subtests do not provision for each other's pods.
type suite struct {
	env    *environment.Environment
	cloud  *fake.InstanceProvider
	joiner *joiner
}

func TestAllocator(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{karpenterapis.AddToScheme},
		Scheduler:   true,
		// kube-controller-manager lifts node.kubernetes.io/not-ready once kwok reports Ready.
		ControllerManager: true,
		Kwok:              true,
	})
	s := &suite{env: env, cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{})}
	s.joiner = startJoiner(t, env)
	operatortest.Start(t, env, operatortest.Options{CompleteNode: s.joiner.complete, Controllers: controllers.Options{
		Enabled:           []string{provisioning.Name, nodeclaimlifecycle.Name},
		CloudProvider:     cloudprovider.NewRegistry(),
		InstanceProvider:  s.cloud,
		BatchIdleDuration: 200 * time.Millisecond,
		BatchMaxDuration:  2 * time.Second,
	}})
	t.Cleanup(func() {
		if t.Failed() {
			s.dump(t)
		}
	})

	// First: no pass has run yet, nor will one for anything else.
	t.Run("a node left held is opened, no pod waiting", s.leftHeld)
	t.Run("a provisioner no pod waits for becomes Ready", s.readyWithoutPods)
	t.Run("a provisioner whose instance types could not be read becomes Ready once they can", s.readyOnceResolved)
	t.Run("pods end Running on launched nodes that satisfy their constraints", s.constraints)
	t.Run("pods that fit existing nodes launch nothing", s.existingRoom)
	t.Run("a second batch counts the nodes in flight", s.inFlight)
	t.Run("a pod whose nomination was taken is nominated again to its launching node", s.renominated)
	t.Run("limits stop launches", s.limits)
	t.Run("an offering without capacity falls through to the next", s.insufficientCapacity)
	t.Run("pods left without capacity are retried once it returns", s.capacityReturns)
	t.Run("a pod selecting a label no provisioner sets is never provisioned for", s.twoPaths)
	t.Run("a provisioner whose instance types cannot be resolved is not Ready", s.unresolved)
	t.Run("a NodePool takes the pods it weighs most for, launching NodeClaims of its class", s.nodePoolTakesItsPods)
	t.Run("a NodePool's limits.nodes caps its nodes", s.nodePoolNodeLimit)
	t.Run("NodePools choose a label of their own per node, which pods spread over", s.nodePoolsChooseASpreadLabel)
}

// provisioner creates a Provisioner whose nodes carry suite=name, and returns the selector
// and toleration its pods need.
func (s *suite) provisioner(t *testing.T, name string, mutate func(*v1alpha5.Provisioner)) (map[string]string, []corev1.Toleration) {
	t.Helper()
	taint := corev1.Taint{Key: "dedicated", Value: name, Effect: corev1.TaintEffectNoSchedule}
	p := builders.Provisioner(builders.ProvisionerOptions{Name: name, Labels: map[string]string{"suite": name}, Taints: []corev1.Taint{taint}})
	if mutate != nil {
		mutate(p)
	}
	s.create(t, p)
	return map[string]string{"suite": name}, []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: name, Effect: corev1.TaintEffectNoSchedule}}
}

func (s *suite) create(t *testing.T, object client.Object) {
	t.Helper()
	if err := s.env.Client.Create(t.Context(), object); err != nil {
		t.Fatalf("creating %T %s, %v", object, object.GetName(), err)
	}
}

func (s *suite) pods(t *testing.T, n int, o builders.PodOptions) []*corev1.Pod {
	t.Helper()
	pods := builders.Pods(n, o)
	for _, pod := range pods {
		s.create(t, pod)
	}
	return pods
}

// running waits for the pods to run and returns the node each runs on.
func (s *suite) running(t *testing.T, pods []*corev1.Pod) map[string]*corev1.Node {
	t.Helper()
	out := map[string]*corev1.Node{}
	eventually.Holds(t, fmt.Sprintf("%d pods Running", len(pods)), func() (bool, string, error) {
		for _, pod := range pods {
			current := &corev1.Pod{}
			if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
				return false, "", err
			}
			if current.Status.Phase != corev1.PodRunning {
				return false, fmt.Sprintf("pod %s is %s on %q", pod.Name, current.Status.Phase, current.Spec.NodeName), nil
			}
			node := &corev1.Node{}
			if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: current.Spec.NodeName}, node); err != nil {
				return false, "", err
			}
			out[pod.Name] = node
		}
		return true, "", nil
	}, eventually.Timeout(pollTimeout))
	return out
}

// launches counts the instances the cloud was asked for, and gave, for a provisioner.
func (s *suite) launches(provisioner string) int {
	instances, err := s.cloud.List(context.Background())
	if err != nil {
		return -1
	}
	n := 0
	for _, instance := range instances {
		if instance.Labels[v1alpha5.ProvisionerNameLabelKey] == provisioner {
			n++
		}
	}
	return n
}

func (s *suite) constraints(t *testing.T) {
	selector, tolerations := s.provisioner(t, "constraints", nil)
	// Each pod takes most of a two-core node, so the spread and anti-affinity groups need a
	// node per pod.
	large := builders.Resources("cpu", "1200m", "memory", "1Gi")
	zonal := s.pods(t, 1, builders.PodOptions{Requests: large, Tolerations: tolerations,
		NodeSelector: map[string]string{"suite": "constraints", corev1.LabelTopologyZone: "us-west-2b"}})
	arm := s.pods(t, 1, builders.PodOptions{Requests: large, Tolerations: tolerations, NodeSelector: selector,
		NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelArchStable, "arm64")}})
	spreadLabels := map[string]string{"app": "spread"}
	spread := s.pods(t, 3, builders.PodOptions{Requests: large, Tolerations: tolerations, NodeSelector: selector, Labels: spreadLabels,
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, spreadLabels)}})
	antiLabels := map[string]string{"app": "anti"}
	anti := s.pods(t, 3, builders.PodOptions{Requests: builders.Resources("cpu", "100m"), Tolerations: tolerations, NodeSelector: selector, Labels: antiLabels,
		PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, antiLabels)}})

	on := s.running(t, slices.Concat(zonal, arm, spread, anti))
	for name, node := range on {
		if node.Labels["suite"] != "constraints" || node.Labels[v1alpha5.ProvisionerNameLabelKey] != "constraints" {
			t.Errorf("pod %s runs on %s, labelled %v, not a node of its provisioner", name, node.Name, node.Labels)
		}
		if !slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == "dedicated" }) {
			t.Errorf("node %s lacks its provisioner's taint: %v", node.Name, node.Spec.Taints)
		}
		if !slices.Contains(node.Finalizers, v1alpha5.TerminationFinalizer) || node.Spec.ProviderID == "" {
			t.Errorf("node %s: finalizers %v, provider id %q", node.Name, node.Finalizers, node.Spec.ProviderID)
		}
	}
	if zone := on[zonal[0].Name].Labels[corev1.LabelTopologyZone]; zone != "us-west-2b" {
		t.Errorf("the pod selecting us-west-2b runs in %s", zone)
	}
	if arch := on[arm[0].Name].Labels[corev1.LabelArchStable]; arch != "arm64" {
		t.Errorf("the pod requiring arm64 runs on %s", arch)
	}
	zones, hosts := map[string]bool{}, map[string]bool{}
	for _, pod := range spread {
		zones[on[pod.Name].Labels[corev1.LabelTopologyZone]] = true
	}
	for _, pod := range anti {
		hosts[on[pod.Name].Name] = true
	}
	if len(zones) != 3 {
		t.Errorf("the spread pods run in zones %v, want three", zones)
	}
	if len(hosts) != 3 {
		t.Errorf("the anti-affine pods run on nodes %v, want three", hosts)
	}
	// Each pod was told of its node: launched for it, or launching when a later batch planned
	// it there.
	events.Wait(t, s.env.Client, spread[0].Name, provisioning.ReasonPlanned, "", eventually.Timeout(pollTimeout))
	eventually.Holds(t, "lastScaleTime set", func() (bool, string, error) {
		p := &v1alpha5.Provisioner{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: "constraints"}, p); err != nil {
			return false, "", err
		}
		return p.Status.LastScaleTime != nil && p.StatusConditions().IsHappy(), fmt.Sprintf("%+v", p.Status), nil
	}, eventually.Timeout(pollTimeout))
}

// leftHeld: a Node registered with the launching taint that no batch in flight holds (a launch
// resumed after a restart, an instance read back late) is opened by a pass its registration
// runs; nothing else may run one.
func (s *suite) leftHeld(t *testing.T) {
	node := environment.KwokNode("left-held", map[string]string{"suite": "left-held"}, builders.Resources("cpu", "2"))
	node.Spec.Taints = []corev1.Taint{{Key: v1alpha5.LaunchingTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	s.create(t, node)
	eventually.Holds(t, "the node opened", func() (bool, string, error) {
		current := &corev1.Node{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), current); err != nil {
			return false, "", err
		}
		return !slices.ContainsFunc(current.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha5.LaunchingTaintKey }), fmt.Sprintf("taints %v", current.Spec.Taints), nil
	}, eventually.Timeout(pollTimeout))
}

func (s *suite) existingRoom(t *testing.T) {
	selector, tolerations := s.provisioner(t, "existing", nil)
	node := environment.KwokNode("existing-room", selector, builders.Resources("cpu", "8", "memory", "32Gi"))
	s.create(t, node)
	// The node is existing room once it serves: Ready, without the not-ready taint Kubernetes
	// puts on every node until then.
	eventually.Holds(t, "the existing node Ready and untainted", func() (bool, string, error) {
		current := &corev1.Node{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), current); err != nil {
			return false, "", err
		}
		return nodes.IsReady(current) && len(current.Spec.Taints) == 0, fmt.Sprintf("taints %v", current.Spec.Taints), nil
	}, eventually.Timeout(pollTimeout))
	pods := s.pods(t, 4, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: selector, Tolerations: tolerations})
	on := s.running(t, pods)
	for name, n := range on {
		if n.Name != "existing-room" {
			t.Errorf("pod %s runs on %s", name, n.Name)
		}
	}
	if n := s.launches("existing"); n != 0 {
		t.Errorf("%d nodes launched for pods that fit an existing node", n)
	}
}

func (s *suite) inFlight(t *testing.T) {
	selector, tolerations := s.provisioner(t, "inflight", func(p *v1alpha5.Provisioner) {
		p.Spec.Requirements = []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.xlarge"}}}
	})
	// The node stays launching (not Ready) until released.
	s.joiner.hold("inflight")
	first := s.pods(t, 1, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: selector, Tolerations: tolerations})
	eventually.Holds(t, "one launch", func() (bool, string, error) {
		n := s.launches("inflight")
		return n == 1, fmt.Sprintf("%d launches", n), nil
	}, eventually.Timeout(pollTimeout))
	// A later batch plans its pods onto the launching node's room instead of launching again.
	second := s.pods(t, 2, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: selector, Tolerations: tolerations})
	for _, pod := range second {
		events.Wait(t, s.env.Client, pod.Name, provisioning.ReasonPlanned, "Waiting for node", eventually.Timeout(pollTimeout))
	}
	if n := s.launches("inflight"); n != 1 {
		t.Errorf("%d launches, want the one in flight only", n)
	}
	s.joiner.release("inflight")
	on := s.running(t, slices.Concat(first, second))
	hosts := map[string]bool{}
	for _, n := range on {
		hosts[n.Name] = true
	}
	if len(hosts) != 1 || s.launches("inflight") != 1 {
		t.Errorf("the pods run on %v after %d launches, want one node", hosts, s.launches("inflight"))
	}
}

// renominated: kube-scheduler clears a nomination it did not make when it tries the pod before
// its node is Ready; the pod watch nominates it again to that node while it is launching.
func (s *suite) renominated(t *testing.T) {
	selector, tolerations := s.provisioner(t, "renominated", nil)
	s.joiner.hold("renominated")
	pods := s.pods(t, 1, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: selector, Tolerations: tolerations})
	nominatedTo := func() (string, error) {
		current := &corev1.Pod{}
		err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pods[0]), current)
		return current.Status.NominatedNodeName, err
	}
	var node string
	eventually.Holds(t, "the pod nominated to its launching node", func() (bool, string, error) {
		var err error
		node, err = nominatedTo()
		return node != "", "not nominated", err
	}, eventually.Timeout(pollTimeout))
	// As kube-scheduler's failed attempt does: the nomination cleared, the pod unschedulable.
	cleared := client.RawPatch(types.MergePatchType, []byte(`{"status":{"nominatedNodeName":null}}`))
	if err := s.env.Client.Status().Patch(t.Context(), pods[0].DeepCopy(), cleared); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the pod nominated again to the same node", func() (bool, string, error) {
		got, err := nominatedTo()
		return got == node, fmt.Sprintf("nominated to %q", got), err
	}, eventually.Timeout(pollTimeout))
	s.joiner.release("renominated")
	on := s.running(t, pods)
	if on[pods[0].Name].Name != node || s.launches("renominated") != 1 {
		t.Errorf("the pod runs on %s after %d launches, want %s after one", on[pods[0].Name].Name, s.launches("renominated"), node)
	}
}

func (s *suite) readyWithoutPods(t *testing.T) {
	s.provisioner(t, "idle", nil)
	eventually.Holds(t, "the provisioner Ready", func() (bool, string, error) {
		p := &v1alpha5.Provisioner{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: "idle"}, p); err != nil {
			return false, "", err
		}
		c := p.StatusConditions().GetCondition(apis.ConditionReady)
		return c != nil && c.IsTrue(), fmt.Sprintf("%+v", c), nil
	}, eventually.Timeout(pollTimeout))
}

func (s *suite) readyOnceResolved(t *testing.T) {
	s.cloud.SetError(errors.New("no instance types read yet"))
	s.provisioner(t, "late", nil)
	ready := func(status corev1.ConditionStatus, reason string) {
		t.Helper()
		eventually.Holds(t, fmt.Sprintf("the provisioner Ready=%s %s", status, reason), func() (bool, string, error) {
			p := &v1alpha5.Provisioner{}
			if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: "late"}, p); err != nil {
				return false, "", err
			}
			c := p.StatusConditions().GetCondition(apis.ConditionReady)
			return c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("%+v", c), nil
		}, eventually.Timeout(pollTimeout))
	}
	ready(corev1.ConditionFalse, provisioning.ReasonInstanceTypesUnresolved)
	s.cloud.SetError(nil)
	ready(corev1.ConditionTrue, "")
}

func (s *suite) limits(t *testing.T) {
	selector, tolerations := s.provisioner(t, "limited", func(p *v1alpha5.Provisioner) {
		p.Spec.Requirements = []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"c5.large"}}}
		p.Spec.Limits = &v1alpha5.Limits{Resources: builders.Resources("cpu", "2")}
	})
	// Each pod needs a two-core node of its own; the limit allows one.
	pods := s.pods(t, 2, builders.PodOptions{Requests: builders.Resources("cpu", "1500m"), NodeSelector: selector, Tolerations: tolerations})
	eventually.Holds(t, "the provisioner not Ready for its limits", func() (bool, string, error) {
		p := &v1alpha5.Provisioner{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: "limited"}, p); err != nil {
			return false, "", err
		}
		c := p.StatusConditions().GetCondition(apis.ConditionReady)
		return c != nil && c.IsFalse() && c.Reason == provisioning.ReasonLimitsExhausted, fmt.Sprintf("%+v", c), nil
	}, eventually.Timeout(pollTimeout))
	events.Wait(t, s.env.Client, "limited", provisioning.ReasonLimitsExhausted, "cpu", eventually.Timeout(pollTimeout))
	waiting := s.oneRunningOneWaiting(t, pods)
	events.Wait(t, s.env.Client, waiting.Name, provisioning.ReasonUnprovisionable, "limits", eventually.Timeout(pollTimeout))
	if n := s.launches("limited"); n != 1 {
		t.Errorf("%d launches under a limit that allows one", n)
	}
}

// oneRunningOneWaiting waits for one of the two pods to run and returns the other, pending.
func (s *suite) oneRunningOneWaiting(t *testing.T, pods []*corev1.Pod) *corev1.Pod {
	t.Helper()
	var waiting *corev1.Pod
	eventually.Holds(t, "one pod Running, the other pending", func() (bool, string, error) {
		running := 0
		waiting = nil
		for _, pod := range pods {
			current := &corev1.Pod{}
			if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
				return false, "", err
			}
			if current.Status.Phase == corev1.PodRunning {
				running++
			} else {
				waiting = current
			}
		}
		return running == 1 && waiting != nil, fmt.Sprintf("%d running", running), nil
	}, eventually.Timeout(pollTimeout))
	return waiting
}

func (s *suite) insufficientCapacity(t *testing.T) {
	selector, tolerations := s.provisioner(t, "ice", func(p *v1alpha5.Provisioner) {
		p.Spec.Requirements = []v1alpha5.NodeSelectorRequirement{
			{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
		}
	})
	// The cheapest offering (all zones cost the same on demand; us-west-2a comes first) has
	// no capacity.
	s.cloud.SetInsufficientCapacity(cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: v1alpha5.CapacityTypeOnDemand})
	t.Cleanup(s.cloud.ClearInsufficientCapacity)
	pods := s.pods(t, 1, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: selector, Tolerations: tolerations})
	on := s.running(t, pods)
	if node := on[pods[0].Name]; node.Labels[corev1.LabelTopologyZone] == "us-west-2a" || node.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
		t.Errorf("the pod runs on %s in %s, want m5.large in another zone", node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelTopologyZone])
	}
}

func (s *suite) capacityReturns(t *testing.T) {
	selector, tolerations := s.provisioner(t, "returns", func(p *v1alpha5.Provisioner) {
		p.Spec.Requirements = []v1alpha5.NodeSelectorRequirement{
			{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"r5.large"}},
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
		}
	})
	for _, zone := range fake.Zones {
		s.cloud.SetInsufficientCapacity(cloudprovider.OfferingKey{InstanceType: "r5.large", Zone: zone, CapacityType: v1alpha5.CapacityTypeOnDemand})
	}
	t.Cleanup(s.cloud.ClearInsufficientCapacity)
	pods := s.pods(t, 1, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: selector, Tolerations: tolerations})
	events.Wait(t, s.env.Client, pods[0].Name, provisioning.ReasonUnprovisionable, "returns", eventually.Timeout(pollTimeout))
	// Nothing changes on the pod: the allocator looks again by itself.
	s.cloud.ClearInsufficientCapacity()
	on := s.running(t, pods)
	if it := on[pods[0].Name].Labels[corev1.LabelInstanceTypeStable]; it != "r5.large" {
		t.Errorf("the pod runs on %s", it)
	}
}

func (s *suite) twoPaths(t *testing.T) {
	// A node group's pods select the group's label, which no Provisioner sets.
	pods := s.pods(t, 1, builders.PodOptions{Requests: builders.Resources("cpu", "1"), NodeSelector: map[string]string{"karpenter.sh/group": "workers"}})
	before := len(s.cloud.CreateCalls())
	events.Wait(t, s.env.Client, pods[0].Name, provisioning.ReasonUnprovisionable, "", eventually.Timeout(pollTimeout))
	if after := len(s.cloud.CreateCalls()); after != before {
		t.Errorf("%d launches for a pod no provisioner can take", after-before)
	}
}

func (s *suite) unresolved(t *testing.T) {
	// No instance type is both arm64 and of a type the catalogue has only for amd64.
	s.provisioner(t, "unresolved", func(p *v1alpha5.Provisioner) {
		p.Spec.Requirements = []v1alpha5.NodeSelectorRequirement{
			{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"c5.large"}},
			{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"arm64"}},
		}
	})
	// No pod is pending for it: creating it is enough for a pass.
	eventually.Holds(t, "the provisioner not Ready", func() (bool, string, error) {
		p := &v1alpha5.Provisioner{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: "unresolved"}, p); err != nil {
			return false, "", err
		}
		c := p.StatusConditions().GetCondition(apis.ConditionReady)
		return c != nil && c.IsFalse() && c.Reason == provisioning.ReasonNoInstanceTypes, fmt.Sprintf("%+v", c), nil
	}, eventually.Timeout(pollTimeout))
	events.Wait(t, s.env.Client, "unresolved", provisioning.ReasonNoInstanceTypes, "no instance type", eventually.Timeout(pollTimeout))
}

func (s *suite) dump(t *testing.T) {
	s.joiner.mu.Lock()
	t.Logf("the joiner's last error: %v", s.joiner.lastErr)
	s.joiner.mu.Unlock()
	var nodeList corev1.NodeList
	if err := s.env.Client.List(context.Background(), &nodeList); err == nil {
		for _, n := range nodeList.Items {
			t.Logf("node %s labels %v annotations %v taints %v ready %s capacity %v", n.Name, n.Labels, n.Annotations, n.Spec.Taints, nodes.ReadyStatus(&n), n.Status.Capacity)
		}
	}
	var podList corev1.PodList
	if err := s.env.Client.List(context.Background(), &podList); err == nil {
		for _, p := range podList.Items {
			t.Logf("pod %s/%s on %q (nominated to %q) %s %v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.NominatedNodeName, p.Status.Phase, p.Status.Conditions)
		}
	}
}

// joiner completes the kubelets of the nodes Karpenter launches, as the sandbox's node joiner
// does. kwok runs a node only when the node carries its annotation from creation: so the fake
// cloud's kubelets (operatortest) register their Nodes with it (complete). kwok then marks the
// node Ready and runs its pods. Until the readiness reconciler of the node lifecycle controllers is merged, the
// joiner also removes the not-ready taint once kwok reports the node Ready, except on the
// nodes of a provisioner held, which stay launching.
type joiner struct {
	env     *environment.Environment
	mu      sync.Mutex
	held    map[string]bool
	lastErr error
}

func startJoiner(t *testing.T, env *environment.Environment) *joiner {
	j := &joiner{env: env, held: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				j.liftTaints(ctx)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return j
}

// complete completes a Node a kubelet of the fake cloud registers for kwok to run it.
func (j *joiner) complete(node *corev1.Node) {
	metav1.SetMetaDataAnnotation(&node.ObjectMeta, environment.KwokNodeAnnotation, "fake")
}

// hold keeps the provisioner's nodes launching until release.
func (j *joiner) hold(provisioner string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.held[provisioner] = true
}

func (j *joiner) release(provisioner string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.held, provisioner)
}

// failed keeps the last error for the dump of a failed test; the step is retried.
func (j *joiner) failed(err error) {
	if err == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastErr = err
}

// liftTaints removes the not-ready taint of launched nodes kwok reports Ready.
func (j *joiner) liftTaints(ctx context.Context) {
	var list corev1.NodeList
	if err := j.env.Client.List(ctx, &list); err != nil {
		j.failed(err)
		return
	}
	for i := range list.Items {
		node := &list.Items[i]
		j.mu.Lock()
		held := j.held[node.Labels[v1alpha5.ProvisionerNameLabelKey]]
		j.mu.Unlock()
		if held || !nodes.IsReady(node) || !nodes.IsLaunching(node) {
			continue
		}
		if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha5.NotReadyTaintKey }) {
			continue
		}
		// The taints are one list: the lock keeps a change made since it was read (the
		// allocator opening its batch), as the readiness controller's does.
		patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha5.NotReadyTaintKey })
		j.failed(j.env.Client.Patch(ctx, node, patch))
	}
}
