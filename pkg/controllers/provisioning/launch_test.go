package provisioning

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
	"karpenter.sh/karpenter/pkg/test/kubelet"
)

// launchingController is a controller on a fake API client and the fake cloud, for one launch at a time.
func launchingController(t *testing.T, funcs interceptor.Funcs, objects ...client.Object) (*Controller, *fake.InstanceProvider, client.Client) {
	t.Helper()
	kube := kubefake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(funcs).Build()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	c, err := New(Options{Client: kube, InstanceProvider: cloud, Recorder: record.NewFakeRecorder(100), Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	// The instances' kubelets register their Nodes, and the NodeClaim lifecycle controller's
	// registration is played with them.
	kubelet.Start(t, &kubelet.Kubelets{Client: kube, Instances: cloud, Register: true})
	return c, cloud, kube
}

func plannedNode(t *testing.T, cloud *fake.InstanceProvider, p *v1alpha5.Provisioner) *scheduling.NewNode {
	t.Helper()
	types, err := cloud.InstanceTypes(context.Background(), Constraints(p))
	if err != nil {
		t.Fatal(err)
	}
	return &scheduling.NewNode{Pool: pools.Provisioner(p.Name), InstanceTypes: types[:2]}
}

// reserveAndLaunch launches a group as a pass does: room reserved, then the launch.
func reserveAndLaunch(c *Controller, g *launchGroup, p *v1alpha5.Provisioner, nodes map[string]corev1.ResourceList) ([]*corev1.Node, error) {
	r, err := c.reserve(g, provisionerPlanOf(p, nodes))
	if r == nil {
		return nil, err
	}
	created, launchErr := c.launch(context.Background(), r)
	return created, errors.Join(err, launchErr)
}

// alone is the launch group of one planned node.
func alone(n *scheduling.NewNode) *launchGroup {
	return groupLaunches([]*scheduling.NewNode{n}, 1)[0]
}

// TestLaunchReturnsTheRegisteredNode: Karpenter creates no Node; the launch returns the Node
// the instance's kubelet registered, once its NodeClaim is synced onto it and it is registered.
func TestLaunchReturnsTheRegisteredNode(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Labels: map[string]string{"team": "ml"}})
	c, cloud, kube := launchingController(t, interceptor.Funcs{})
	nodes, err := reserveAndLaunch(c, alone(plannedNode(t, cloud, p)), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var claims v1.NodeClaimList
	if err := kube.List(t.Context(), &claims); err != nil || len(claims.Items) != 1 {
		t.Fatalf("%d nodeclaims (%v), want the launch's", len(claims.Items), err)
	}
	node := nodes[0]
	if node == nil || node.Spec.ProviderID != claims.Items[0].Status.ProviderID || !nodeclaims.Registered(node) || node.Labels["team"] != "ml" {
		t.Errorf("node %+v, want the registered node of nodeclaim %s", node, claims.Items[0].Name)
	}
}

// TestLaunchGivesUpOnANodeClaimDeletedUnregistered: a NodeClaim deleted before its node
// registered (the lifecycle controller's registration timeout) fails its launch and releases
// its reservation; when the NodeClaim itself cannot be created, nothing is launched.
func TestLaunchGivesUpOnANodeClaimDeletedUnregistered(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	c, cloud, kube := launchingController(t, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if err := cl.SubResource(subResource).Patch(ctx, obj, patch, opts...); err != nil {
			return err
		}
		if nc, ok := obj.(*v1.NodeClaim); ok && nc.Status.ProviderID != "" {
			return cl.Delete(ctx, nc.DeepCopy())
		}
		return nil
	}})
	if _, err := reserveAndLaunch(c, alone(plannedNode(t, cloud, p)), p, nil); !errors.Is(err, errNodeClaimGone) {
		t.Fatalf("a launch whose NodeClaim went unregistered returned %v, want errNodeClaimGone", err)
	}
	var claims v1.NodeClaimList
	if err := kube.List(t.Context(), &claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 || claims.Items[0].DeletionTimestamp == nil {
		t.Errorf("nodeclaims %+v, want the launched one being deleted", claims.Items)
	}
	if used := c.ledger.Used(pools.Provisioner("default"), nil); len(used) != 0 {
		t.Errorf("the failed launch still reserves %v", used)
	}

	c, cloud, _ = launchingController(t, interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
		return errors.New("the apiserver is down")
	}})
	if _, err := reserveAndLaunch(c, alone(plannedNode(t, cloud, p)), p, nil); err == nil {
		t.Fatal("a launch whose NodeClaim failed succeeded")
	}
	if calls := len(cloud.CreateCalls()); calls != 0 {
		t.Errorf("%d cloud calls without a NodeClaim, want none", calls)
	}
}

// TestLaunchRefusedOverTheLimit: a plan the limits no longer allow launches nothing.
func TestLaunchRefusedOverTheLimit(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Limits: cpu("4")})
	c, cloud, _ := launchingController(t, interceptor.Funcs{})
	nodes := map[string]corev1.ResourceList{"full": cpu("4")}
	_, err := reserveAndLaunch(c, alone(plannedNode(t, cloud, p)), p, nodes)
	var exceeded *LimitExceededError
	if !errors.As(err, &exceeded) || len(cloud.CreateCalls()) != 0 {
		t.Errorf("launch: %v after %d cloud calls; want a LimitExceededError and no call", err, len(cloud.CreateCalls()))
	}
}

// TestLaunchFallsThroughOfferings: the cloud gets every candidate cheapest first, so an
// offering without capacity falls through to the next.
func TestLaunchFallsThroughOfferings(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "fall-through"})
	c, cloud, _ := launchingController(t, interceptor.Funcs{})
	planned := plannedNode(t, cloud, p)
	first := planned.Offerings()[0]
	cloud.SetInsufficientCapacity(first.Key())
	nodes, err := reserveAndLaunch(c, alone(planned), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := nodes[0]
	calls := cloud.CreateCalls()
	if len(calls) != 1 || calls[0].Candidates[0].Key() != first.Key() || len(calls[0].Candidates) < 2 {
		t.Fatalf("create calls %v, want one with every candidate, the cheapest first", calls)
	}
	launched := cloudprovider.OfferingKey{InstanceType: node.Labels[corev1.LabelInstanceTypeStable], Zone: node.Labels[corev1.LabelTopologyZone], CapacityType: node.Labels[v1alpha5.CapacityTypeLabelKey]}
	if launched == first.Key() || launched != calls[0].Candidates[1].Key() {
		t.Errorf("launched %v, want the second candidate %v", launched, calls[0].Candidates[1].Key())
	}
	recorder := c.recorder.(*record.FakeRecorder)
	select {
	case event := <-recorder.Events:
		if !strings.Contains(event, ReasonInsufficientCapacity) || !strings.Contains(event, first.Key().InstanceType) || !strings.Contains(event, "InsufficientInstanceCapacity") {
			t.Errorf("event %q, want the offering without capacity named with its reason", event)
		}
	default:
		t.Error("no event says the launch fell back from an offering without capacity")
	}
	var created dto.Metric
	if err := nodesCreated.WithLabelValues("fall-through", launched.InstanceType, launched.Zone, launched.CapacityType).Write(&created); err != nil || created.GetCounter().GetValue() < 1 {
		t.Errorf("karpenter_nodes_created_total for the launch is %v (%v)", created.GetCounter().GetValue(), err)
	}
}

// TestTellOncePerCause: a pod that stays pending for the same reason is told once; a new
// reason, or a pod pending again after it was not, is told again.
func TestTellOncePerCause(t *testing.T) {
	c, _, _ := launchingController(t, interceptor.Funcs{})
	recorder := c.recorder.(*record.FakeRecorder)
	pod := builders.Pod(builders.PodOptions{Name: "p", Unschedulable: true})
	pod.UID = "uid-p"
	snapshot := &state.Snapshot{}
	results := func(reason string) *scheduling.Results {
		return &scheduling.Results{Unschedulable: []scheduling.PodError{{Pod: pod, Reason: reason}}}
	}
	for _, step := range []struct {
		pending []*corev1.Pod
		reason  string
		events  int
	}{
		{[]*corev1.Pod{pod}, "no provisioner", 1},
		{[]*corev1.Pod{pod}, "no provisioner", 0},
		{[]*corev1.Pod{pod}, "limits", 1},
		{nil, "", 0},
		{[]*corev1.Pod{pod}, "limits", 1},
	} {
		r := &scheduling.Results{}
		if step.reason != "" {
			r = results(step.reason)
		}
		c.tell(snapshot.LaunchingNodes(), r, nil, nil)
		c.forgetTold(step.pending, nil)
		if got := len(recorder.Events); got != step.events {
			t.Errorf("after %q: %d Events, want %d", step.reason, got, step.events)
		}
		for len(recorder.Events) > 0 {
			<-recorder.Events
		}
	}
}

// TestSeveralProvisioners: a pod goes to the cheapest plan among the Provisioners it is
// compatible with, never to one whose taint it does not tolerate, whatever its price.
func TestSeveralProvisioners(t *testing.T) {
	instanceType := func(name string) []v1alpha5.NodeSelectorRequirement {
		return []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{name}}}
	}
	expensive := builders.Provisioner(builders.ProvisionerOptions{Name: "a-expensive", Requirements: instanceType("m5.2xlarge")})
	cheap := builders.Provisioner(builders.ProvisionerOptions{Name: "b-cheap", Requirements: instanceType("c5.large")})
	cheapest := builders.Provisioner(builders.ProvisionerOptions{Name: "c-tainted", Requirements: instanceType("t3.medium"),
		Taints: []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}})
	pod := builders.Pod(builders.PodOptions{Name: "p", Unschedulable: true, Requests: builders.Resources("cpu", "500m")})
	for range 3 {
		c, cloud, _ := launchingController(t, interceptor.Funcs{}, expensive, cheap, cheapest, pod)
		if _, err := c.provision(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		awaitBatches(context.Background(), c.inFlight.capture())
		calls := cloud.CreateCalls()
		if len(calls) != 1 || calls[0].ProvisionerName != "b-cheap" {
			var names []string
			for _, call := range calls {
				names = append(names, call.ProvisionerName)
			}
			t.Fatalf("launched for %v, want b-cheap once", names)
		}
	}
}

// TestLaunchGroupWithOneCall: identical planned nodes launch with one cloud call for all of
// them, each instance gets its Node, and the limits count every one.
func TestLaunchGroupWithOneCall(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	c, cloud, kube := launchingController(t, interceptor.Funcs{})
	planned := plannedNode(t, cloud, p)
	groups := groupLaunches([]*scheduling.NewNode{planned, planned, planned}, 3)
	if len(groups) != 1 {
		t.Fatalf("%d groups, want one", len(groups))
	}
	created, err := reserveAndLaunch(c, groups[0], p, nil)
	if err != nil || len(created) != 3 {
		t.Fatalf("launch = %d nodes, %v; want 3", len(created), err)
	}
	if calls := cloud.CreateCalls(); len(calls) != 1 || calls[0].Count != 3 {
		t.Errorf("create calls %+v, want one of count 3", calls)
	}
	var list corev1.NodeList
	if err := kube.List(context.Background(), &list); err != nil || len(list.Items) != 3 {
		t.Errorf("%d nodes (%v), want 3", len(list.Items), err)
	}
	if used := c.ledger.Used(pools.Provisioner("default"), nil); used.Cpu().IsZero() {
		t.Errorf("the ledger counts %v for 3 launched nodes", used)
	}
}

// TestLaunchGroupUpToTheLimit: a group the limits allow only part of launches that part in one
// call and reports the rest, whose pods stay pending.
func TestLaunchGroupUpToTheLimit(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	c, cloud, _ := launchingController(t, interceptor.Funcs{})
	planned := plannedNode(t, cloud, p)
	largest := planned.InstanceTypes[len(planned.InstanceTypes)-1].Capacity.Cpu().DeepCopy()
	limit := largest.DeepCopy()
	limit.Add(largest)
	p.Spec.Limits = &v1alpha5.Limits{Resources: corev1.ResourceList{corev1.ResourceCPU: limit}}
	created, err := reserveAndLaunch(c, groupLaunches([]*scheduling.NewNode{planned, planned, planned}, 3)[0], p, nil)
	var exceeded *LimitExceededError
	if !errors.As(err, &exceeded) || len(created) != 2 {
		t.Fatalf("launch = %d nodes, %v; want 2 and a LimitExceededError", len(created), err)
	}
	if calls := cloud.CreateCalls(); len(calls) != 1 || calls[0].Count != 2 {
		t.Errorf("create calls %+v, want one of count 2", calls)
	}
}

// TestLaunchGroupWithinEveryReservation: under limits on two resources, the candidates a group
// launches with are within what each of its nodes reserved. (Reserved one by one from the whole
// list, the second node's cheapest fitting candidate set another size bound, which let back a
// type the first had dropped: 2 × 32Gi launched under a 50Gi limit.)
func TestLaunchGroupWithinEveryReservation(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	p.Spec.Limits = &v1alpha5.Limits{Resources: builders.Resources("cpu", "7", "memory", "50Gi")}
	c, _, _ := launchingController(t, interceptor.Funcs{})
	candidate := func(name, cpu, memory string) cloudprovider.Candidate {
		return cloudprovider.Candidate{InstanceType: &cloudprovider.InstanceType{Name: name, Capacity: builders.Resources("cpu", cpu, "memory", memory)}}
	}
	node := &scheduling.NewNode{Pods: builders.Pods(1, builders.PodOptions{})}
	g := &launchGroup{pool: pools.Provisioner("default"), candidates: []cloudprovider.Candidate{candidate("a", "4", "8Gi"), candidate("x", "2", "32Gi")}, nodes: []*scheduling.NewNode{node, node}}
	r, err := c.reserve(g, provisionerPlanOf(p, nil))
	if r == nil {
		t.Fatalf("nothing reserved, %v", err)
	}
	launched := len(r.group.nodes)
	for _, candidate := range r.group.candidates {
		for name, limit := range p.Spec.Limits.Resources {
			total := candidate.InstanceType.Capacity[name].DeepCopy()
			total.Mul(int64(launched))
			if total.Cmp(limit) > 0 {
				t.Errorf("%d nodes may launch as %s: %s of %s, past the limit of %s", launched, candidate.InstanceType.Name, total.String(), name, limit.String())
			}
		}
	}
}

// TestToldForgetsPodsGoneAfterAPassWithNothingPending (issue 34, finding 16): what each pod was
// told is forgotten once the pod is no longer pending, at the next pass whether or not other
// pods are pending then, so that a controller of a cluster whose pods come and go does not keep
// every pod it ever told.
func TestToldForgetsPodsGoneAfterAPassWithNothingPending(t *testing.T) {
	// No Provisioner: the pod is told none can launch a node for it.
	pod := builders.Pod(builders.PodOptions{Name: "p", Unschedulable: true})
	pod.UID = "uid-p"
	c, _, kube := launchingController(t, interceptor.Funcs{}, pod)
	ctx := context.Background()
	if _, err := c.provision(ctx, false); err != nil {
		t.Fatal(err)
	}
	if told := c.toldCount(); told != 1 {
		t.Fatalf("%d pods told after a pass with one pending, want 1", told)
	}
	if err := kube.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := c.provision(ctx, false); err != nil {
		t.Fatal(err)
	}
	if told := c.toldCount(); told != 0 {
		t.Errorf("%d pods still remembered as told after a pass with none pending, want 0", told)
	}
}

// toldCount is how many pods the controller remembers telling.
func (c *Controller) toldCount() int {
	c.toldMu.Lock()
	defer c.toldMu.Unlock()
	return len(c.told)
}

// provisionerPlanOf is the Provisioner as a pass plans it, its nodes counting against its limits.
func provisionerPlanOf(p *v1alpha5.Provisioner, nodes map[string]corev1.ResourceList) *poolPlan {
	return &poolPlan{key: pools.Provisioner(p.Name), stored: p, updated: p.DeepCopy(), nodes: nodes}
}

// TestPassKeepsAHandOverTheCacheLags: a replacement's room handed to its NodeClaim (a launch
// still in progress) stands while the cache does not show that NodeClaim yet but the API server
// holds it, and goes once the API server no longer does. Dropped at the first pass whose read of
// the cache lacked it, the room was free until the cache caught up.
func TestPassKeepsAHandOverTheCacheLags(t *testing.T) {
	c, _, _ := launchingController(t, interceptor.Funcs{})
	ctx := context.Background()
	_, id, err := c.ledger.Reserve(pools.Provisioner("p"), nil, nil, []cloudprovider.Candidate{candidate("small", "2")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.ledger.HandOver(id, "claim-1")
	for _, tc := range []struct {
		name string
		held bool
		used string
	}{
		{"held by the API server, not in the cache yet", true, "2"},
		{"gone from the API server", false, "0"},
	} {
		api := kubefake.NewClientBuilder()
		if tc.held {
			api = api.WithObjects(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-1"}})
		}
		c.reader = api.Build()
		if _, err := c.provision(ctx, false); err != nil {
			t.Fatal(err)
		}
		if used := c.ledger.Used(pools.Provisioner("p"), nil); used.Cpu().Cmp(resource.MustParse(tc.used)) != 0 {
			t.Errorf("%s: %s cores reserved after a pass, want %s", tc.name, used.Cpu(), tc.used)
		}
	}
}
