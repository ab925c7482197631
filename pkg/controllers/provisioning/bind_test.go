package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

func TestBindable(t *testing.T) {
	claim := func(name, volume string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	}
	snapshot := &state.Snapshot{Claims: []corev1.PersistentVolumeClaim{claim("bound", "pv-1"), claim("unbound", ""), claim("db-0-scratch", "pv-2")}}
	withClaim := func(name string) func(*corev1.Pod) {
		return func(pod *corev1.Pod) {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		}
	}
	for _, tc := range []struct {
		name     string
		bindPods bool
		mutate   func(*corev1.Pod)
		want     bool
	}{
		{name: "binding off", mutate: func(*corev1.Pod) {}},
		{name: "no volumes", bindPods: true, mutate: func(*corev1.Pod) {}, want: true},
		{name: "a bound claim", bindPods: true, mutate: withClaim("bound"), want: true},
		{name: "an unbound claim", bindPods: true, mutate: withClaim("unbound")},
		{name: "a claim not created yet", bindPods: true, mutate: withClaim("missing")},
		{name: "a bound and an unbound claim", bindPods: true, mutate: func(pod *corev1.Pod) { withClaim("bound")(pod); withClaim("unbound")(pod) }},
		{name: "an ephemeral volume whose claim is bound", bindPods: true, want: true, mutate: func(pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
		}},
		{name: "the default scheduler named", bindPods: true, want: true, mutate: func(pod *corev1.Pod) { pod.Spec.SchedulerName = corev1.DefaultSchedulerName }},
		{name: "another scheduler", bindPods: true, mutate: func(pod *corev1.Pod) { pod.Spec.SchedulerName = "batch-scheduler" }},
		{name: "resource claims", bindPods: true, mutate: func(pod *corev1.Pod) {
			pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
		}},
	} {
		pod := builders.Pod(builders.PodOptions{Name: "db-0", Unschedulable: true})
		tc.mutate(pod)
		c := &Controller{bindPods: tc.bindPods}
		if got := c.bindable(snapshot)(pod); got != tc.want {
			t.Errorf("%s: bindable = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// bindingAPI plays the API server's pods/binding: it sets the pod's node, refusing a pod already
// bound or of another UID, as assignPod does.
var bindingAPI = interceptor.Funcs{SubResourceCreate: func(ctx context.Context, cl client.Client, subResource string, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	binding, ok := sub.(*corev1.Binding)
	if subResource != "binding" || !ok {
		return cl.SubResource(subResource).Create(ctx, obj, sub, opts...)
	}
	pod := &corev1.Pod{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), pod); err != nil {
		return err
	}
	if pod.Spec.NodeName != "" || (binding.UID != "" && binding.UID != pod.UID) {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, pod.Name, nil)
	}
	pod.Spec.NodeName = binding.Target.Name
	return cl.Update(ctx, pod)
}}

// TestBatchPodsBoundWhenBindingPods: with BindPods, the pods of a launched node are bound to it
// and told so; a pod whose claim waits for kube-scheduler's volume binding is nominated instead,
// and one kube-scheduler bound elsewhere meanwhile is left where it is.
func TestBatchPodsBoundWhenBindingPods(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	c, cloud, kube := launchingController(t, bindingAPI, p)
	c.bindPods = true
	recorder := record.NewFakeRecorder(100)
	c.recorder = recorder
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}}
	if err := kube.Create(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	n := plannedNode(t, cloud, p)
	var plan []*scheduling.NewNode
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"plain", "with-unbound-claim", "bound-elsewhere"} {
		pod := builders.Pod(builders.PodOptions{Name: name, Unschedulable: true})
		pod.UID = types.UID(name)
		if name == "with-unbound-claim" {
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}
		stored := pod.DeepCopy()
		if name == "bound-elsewhere" {
			stored.Spec.NodeName = "elsewhere"
		}
		if err := kube.Create(t.Context(), stored); err != nil {
			t.Fatal(err)
		}
		pods[name] = pod
		plan = append(plan, &scheduling.NewNode{Pool: n.Pool, InstanceTypes: n.InstanceTypes, Pods: []*corev1.Pod{pod}})
	}
	snapshot, err := state.Read(t.Context(), kube, c.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	plans := map[pools.Key]*poolPlan{pools.Provisioner(p.Name): {key: pools.Provisioner(p.Name), stored: p, updated: p.DeepCopy(), nodes: map[string]corev1.ResourceList{}}}
	batch, launches, refused := c.reserveAll(t.Context(), plan, plans)
	if refused || c.launchBatch(t.Context(), batch, launches, c.bindable(snapshot)) {
		t.Fatal("a launch, binding or nomination failed")
	}
	got := map[string]*corev1.Pod{}
	for name := range pods {
		got[name] = &corev1.Pod{}
		if err := kube.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, got[name]); err != nil {
			t.Fatal(err)
		}
	}
	if node := c.told[pods["plain"].UID]; got["plain"].Spec.NodeName != node || got["plain"].Status.NominatedNodeName != "" {
		t.Errorf("plain pod bound to %q, nominated to %q; want bound to its node %q, not nominated", got["plain"].Spec.NodeName, got["plain"].Status.NominatedNodeName, node)
	}
	if node := c.told[pods["with-unbound-claim"].UID]; got["with-unbound-claim"].Spec.NodeName != "" || got["with-unbound-claim"].Status.NominatedNodeName != node {
		t.Errorf("pod with an unbound claim bound to %q, nominated to %q; want nominated to its node %q, for kube-scheduler to bind",
			got["with-unbound-claim"].Spec.NodeName, got["with-unbound-claim"].Status.NominatedNodeName, node)
	}
	if got["bound-elsewhere"].Spec.NodeName != "elsewhere" || got["bound-elsewhere"].Status.NominatedNodeName != "" {
		t.Errorf("pod bound elsewhere meanwhile now on %q, nominated to %q; want left where it was", got["bound-elsewhere"].Spec.NodeName, got["bound-elsewhere"].Status.NominatedNodeName)
	}
	boundEvents := 0
	for len(recorder.Events) > 0 {
		if event := <-recorder.Events; strings.Contains(event, "was launched for this pod") && strings.HasSuffix(event, "and the pod bound to it") {
			boundEvents++
		}
	}
	if boundEvents != 1 {
		t.Errorf("%d launch Events say the pod was bound, want 1 (the plain pod's)", boundEvents)
	}
}

// TestPodNeverBoundToAnUnregisteredNode: a planned pod is bound only to a node its NodeClaim
// registered; to one its kubelet registered but that still carries the unregistered taint (which
// evicts what runs there) it is nominated instead.
func TestPodNeverBoundToAnUnregisteredNode(t *testing.T) {
	unregistered := builders.Node(builders.NodeOptions{Name: "unregistered"})
	unregistered.Spec.Taints = []corev1.Taint{nodeclaims.UnregisteredTaint}
	registered := builders.Node(builders.NodeOptions{Name: "registered", Labels: map[string]string{v1.NodeRegisteredLabelKey: "true"}})
	var pods []client.Object
	var plan []nomination
	for name, node := range map[string]string{"waits": "unregistered", "runs": "registered", "nowhere": "missing"} {
		pod := builders.Pod(builders.PodOptions{Name: name, Unschedulable: true})
		pods = append(pods, pod)
		plan = append(plan, nomination{pod: pod, node: node})
	}
	c, _, kube := launchingController(t, bindingAPI, append(pods, unregistered, registered)...)
	bound, rest, err := c.place(t.Context(), plan, func(*corev1.Pod) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var nominated []string
	for _, n := range rest {
		nominated = append(nominated, n.pod.Name+"->"+n.node)
	}
	slices.Sort(nominated)
	if len(bound) != 1 || !slices.Equal(nominated, []string{"nowhere->missing", "waits->unregistered"}) {
		t.Errorf("%d bound, nominated %v; want runs bound, the others nominated", len(bound), nominated)
	}
	waiting := &corev1.Pod{}
	if err := kube.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "waits"}, waiting); err != nil || waiting.Spec.NodeName != "" {
		t.Errorf("pod waits on %q (%v), want unbound", waiting.Spec.NodeName, err)
	}
}

// TestPodsAreBoundOnceTheirNodesRegistrationSettled: kube-controller-manager evicts a pod bound
// to a node whose unregistered taint (NoExecute) its cache still shows, so the allocator binds a
// pod to the node launched for it only once the node has been registered for BindSettle. (It
// bound at once, and an e2e run lost three pods so.)
func TestPodsAreBoundOnceTheirNodesRegistrationSettled(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{BindPods: true, BindSettle: time.Second}, bindingAPI, func(cloudprovider.LaunchRequest) bool { return false }, p)
	pod := s.pending(t, nodeSized, "a")[0]
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	clock := s.c.clock.(*clocktesting.FakeClock)
	eventually.Holds(t, "the binding waiting for the registration to settle", func() (bool, string, error) {
		return clock.HasWaiters(), "no waiter on the clock", nil
	})
	nodeName := func() string {
		current := &corev1.Pod{}
		if err := s.kube.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
			t.Fatal(err)
		}
		return current.Spec.NodeName
	}
	if name := nodeName(); name != "" {
		t.Fatalf("pod bound to %s before its node's registration settled", name)
	}
	clock.Step(time.Second)
	s.settle(t)
	if nodeName() == "" {
		t.Error("pod not bound once its node's registration settled")
	}
}

// TestAPodIsBoundByOneCallerOnly: while a batch waits for its nodes' registration to settle
// before binding its pods, a pass planning the same pods again (each onto the other's node)
// leaves them to the batch: each pod is bound once, where the batch planned it. (Two callers
// bound them crosswise, both onto one node past its room.)
func TestAPodIsBoundByOneCallerOnly(t *testing.T) {
	var objects []client.Object
	for _, name := range []string{"x", "y"} {
		node := builders.Node(builders.NodeOptions{Name: name, Labels: map[string]string{v1.NodeRegisteredLabelKey: "true"}})
		node.Spec.ProviderID = "fake:///" + name
		objects = append(objects, node, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-" + name},
			Status: v1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: name, Conditions: []metav1.Condition{
				{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.Now()}}}})
	}
	a := builders.Pod(builders.PodOptions{Name: "a", Unschedulable: true})
	b := builders.Pod(builders.PodOptions{Name: "b", Unschedulable: true})
	a.UID, b.UID = "a", "b"
	c, _, kube := launchingController(t, bindingAPI, append(objects, a, b)...)
	c.bindSettle = time.Minute
	all := func(*corev1.Pod) bool { return true }
	batch := make(chan error, 1)
	go func() {
		_, _, err := c.place(t.Context(), []nomination{{pod: a, node: "x"}, {pod: b, node: "y"}}, all)
		batch <- err
	}()
	clock := c.clock.(*clocktesting.FakeClock)
	eventually.Holds(t, "the batch waiting for the registrations to settle", func() (bool, string, error) {
		return clock.HasWaiters(), "no waiter on the clock", nil
	})
	type answer struct {
		bound, rest int
		err         error
	}
	pass := make(chan answer, 1)
	go func() {
		bound, rest, err := c.place(t.Context(), []nomination{{pod: a, node: "y"}, {pod: b, node: "x"}}, all)
		pass <- answer{len(bound), len(rest), err}
	}()
	var passed answer
	done := 0
	eventually.Holds(t, "the batch and the pass done", func() (bool, string, error) {
		clock.Step(time.Minute)
		select {
		case err := <-batch:
			if err != nil {
				return false, "", err
			}
			done++
		case passed = <-pass:
			done++
		default:
		}
		return done == 2, fmt.Sprintf("%d of 2 done", done), nil
	})
	if passed.err != nil || passed.bound != 0 || passed.rest != 0 {
		t.Errorf("the pass bound %d, left %d to nominate (%v); want both left to the batch", passed.bound, passed.rest, passed.err)
	}
	for pod, want := range map[*corev1.Pod]string{a: "x", b: "y"} {
		current := &corev1.Pod{}
		if err := kube.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil || current.Spec.NodeName != want {
			t.Errorf("pod %s on %q (%v), want %s, where the batch planned it", pod.Name, current.Spec.NodeName, err, want)
		}
	}
}

// TestABatchsPodsKeepTheirRoomWhileItSettles: while a batch waits for its node's registration
// to settle before binding its pod, a pass that sees the node counts that pod on it: a larger
// pod pending meanwhile gets a node of its own. (The pass planned the batch's pod again, the
// larger one onto the batch's node and the batch's pod elsewhere, and the batch then bound its
// pod there all the same: both on one node, past its room.)
func TestABatchsPodsKeepTheirRoomWhileItSettles(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	s := newPasses(t, Options{BindPods: true, BindSettle: time.Minute}, bindingAPI, func(cloudprovider.LaunchRequest) bool { return false }, p)
	small := s.pending(t, builders.PodOptions{Requests: builders.Resources("cpu", "1")}, "small")[0]
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	clock := s.c.clock.(*clocktesting.FakeClock)
	eventually.Holds(t, "the batch waiting for its node's registration to settle", func() (bool, string, error) {
		return clock.HasWaiters(), "no waiter on the clock", nil
	})
	large := s.pending(t, nodeSized, "large")[0]
	pass := make(chan error, 1)
	go func() {
		_, err := s.c.provision(t.Context(), false)
		pass <- err
	}()
	passed := false
	eventually.Holds(t, "the pass and every batch done", func() (bool, string, error) {
		clock.Step(time.Minute)
		select {
		case err := <-pass:
			if err != nil {
				return false, "", err
			}
			passed = true
		default:
		}
		return passed && len(s.c.inFlight.capture()) == 0, "still placing", nil
	})
	onNode := func(pod *corev1.Pod) string {
		current := &corev1.Pod{}
		if err := s.kube.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
			t.Fatal(err)
		}
		return current.Spec.NodeName
	}
	if a, b := onNode(small), onNode(large); a == "" || b == "" || a == b {
		t.Errorf("small on %q, large on %q: want each bound, to a node of its own (one 2-CPU node has room for one)", a, b)
	}
}

// TestABatchsPodsKeepTheRoomOfTheirNodeClaimBeforeItsNodeRegisters: while a batch's instance is
// launched and recorded on its NodeClaim but its kubelet has not registered the Node yet, the
// snapshot shows a launching node standing for the NodeClaim; a pass counts the batch's pod on
// it, so a larger pod pending meanwhile gets a node of its own at once. (The pass left the
// batch's pod out and planned the larger one onto that room, launching nothing; once the Node
// registered the batch's pod took it, and the larger one waited for a later launch — a
// 1,000-pod run of the latency harness launched 71 of its 500 nodes a minute late so.)
func TestABatchsPodsKeepTheRoomOfTheirNodeClaimBeforeItsNodeRegisters(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	var kubeletMayRegister atomic.Bool
	refuseNodes := interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Node); ok && !kubeletMayRegister.Load() {
			return apierrors.NewServiceUnavailable("the kubelet has not registered yet")
		}
		return cl.Create(ctx, obj, opts...)
	}}
	s := newPasses(t, Options{}, refuseNodes, func(cloudprovider.LaunchRequest) bool { return false }, p)
	s.pending(t, builders.PodOptions{Requests: builders.Resources("cpu", "1")}, "small")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the small pod's instance recorded on its NodeClaim", func() (bool, string, error) {
		var list v1.NodeClaimList
		if err := s.kube.List(t.Context(), &list); err != nil {
			return false, "", err
		}
		return len(list.Items) == 1 && list.Items[0].Status.ProviderID != "", fmt.Sprintf("%d nodeclaims", len(list.Items)), nil
	})
	s.pending(t, nodeSized, "large")
	if _, err := s.c.provision(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	kubeletMayRegister.Store(true)
	s.settle(t)
	if launched := len(s.cloud.CreateCalls()); launched != 2 {
		t.Errorf("%d launches for the two pods' passes, want 2: the small pod's node has no room left for the large one", launched)
	}
}
