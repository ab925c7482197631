package provisioning

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

func TestNominatePatch(t *testing.T) {
	patch, err := nominatePatch("ip-10-0-0-1.ec2.internal")
	if want := `{"status":{"nominatedNodeName":"ip-10-0-0-1.ec2.internal"}}`; err != nil || string(patch) != want {
		t.Errorf("patch %s, %v; want %s", patch, err, want)
	}
}

// TestNominatedPods: a pod nominated to a node takes its room there and is not planned again,
// as kube-scheduler counts it; one nominated to a node gone or going waits for a node as if it
// were not nominated.
func TestNominatedPods(t *testing.T) {
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{notReady},
		Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", v1alpha5.ProvisionerNameLabelKey: "default"}})
	deleting := builders.Node(builders.NodeOptions{Name: "deleting", Allocatable: cpu("4")})
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{v1alpha5.TerminationFinalizer}
	nominated := func(name, node string, o builders.PodOptions) corev1.Pod {
		o.Name = name
		pod := builders.Pod(o)
		pod.Status.NominatedNodeName = node
		return *pod
	}
	terminating := nominated("terminating", "launching", builders.PodOptions{Unschedulable: true})
	terminating.DeletionTimestamp = &metav1.Time{}
	terminating.Finalizers = []string{"example.com/keep"}
	c := &state.Snapshot{
		Nodes: []corev1.Node{*launching, *deleting},
		Pods: []corev1.Pod{
			nominated("waiting", "launching", builders.PodOptions{Unschedulable: true}),
			nominated("bound", "launching", builders.PodOptions{NodeName: "launching", Phase: corev1.PodRunning}),
			nominated("done", "launching", builders.PodOptions{Phase: corev1.PodSucceeded}),
			terminating,
			nominated("to-a-gone-node", "gone", builders.PodOptions{Unschedulable: true}),
			nominated("to-a-deleted-node", "deleting", builders.PodOptions{Unschedulable: true}),
			nominated("not-tried-yet", "gone", builders.PodOptions{}),
			nominated("unnominated", "", builders.PodOptions{Unschedulable: true}),
		},
		InstanceTypes: catalogue(),
	}
	var pending []string
	for _, pod := range c.Pending() {
		pending = append(pending, pod.Name)
	}
	if want := []string{"to-a-deleted-node", "to-a-gone-node", "unnominated"}; !slices.Equal(pending, want) {
		t.Errorf("pending %v, want %v", pending, want)
	}
	nodes := c.Room()
	if len(nodes) != 1 {
		t.Fatalf("nodes %v, want launching only", nodes)
	}
	var on []string
	for _, pod := range nodes[0].Pods {
		on = append(on, pod.Name)
	}
	if want := []string{"waiting", "bound"}; !slices.Equal(on, want) {
		t.Errorf("pods on launching %v, want %v", on, want)
	}
}

// TestBatchPodsNominatedBeforeOpening: each pod of a batch is nominated to the node launched
// for it before any node of the batch is opened, so that kube-scheduler, once it sees the
// nodes, already counts every pod on its planned node. A batch of one node too: opened at once,
// other pending pods took its room before its own were nominated (TestAllocator's limits
// subtests, about one run in eight with a 1 s registration poll), and a pod nominated to a node
// that exists is not planned again.
func TestBatchPodsNominatedBeforeOpening(t *testing.T) {
	for _, names := range [][]string{{"a"}, {"a", "b", "c"}} {
		t.Run(fmt.Sprintf("a batch of %d", len(names)), func(t *testing.T) {
			batchPodsNominatedBeforeOpening(t, names)
		})
	}
}

func batchPodsNominatedBeforeOpening(t *testing.T, names []string) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	var pods []client.Object
	var plan []*scheduling.NewNode
	var mu sync.Mutex
	nominatedAfterRelease, released := false, 0
	c, cloud, kube := launchingController(t, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				mu.Lock()
				released++
				mu.Unlock()
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			mu.Lock()
			if _, ok := obj.(*corev1.Pod); ok {
				nominatedAfterRelease = nominatedAfterRelease || released > 0
			}
			mu.Unlock()
			return cl.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
	}, p)
	n := plannedNode(t, cloud, p)
	for _, name := range names {
		pod := builders.Pod(builders.PodOptions{Name: name, Unschedulable: true, Labels: map[string]string{"app": "spread"},
			TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": "spread"})}})
		pod.UID = types.UID(name)
		pods = append(pods, pod)
		plan = append(plan, &scheduling.NewNode{Pool: n.Pool, InstanceTypes: n.InstanceTypes, Pods: []*corev1.Pod{pod}})
	}
	for _, pod := range pods {
		if err := kube.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	plans := map[pools.Key]*poolPlan{pools.Provisioner(p.Name): {key: pools.Provisioner(p.Name), stored: p, updated: p.DeepCopy(), nodes: map[string]corev1.ResourceList{}}}
	batch, launches, refused := c.reserveAll(context.Background(), plan, plans)
	if refused || c.launchBatch(context.Background(), batch, launches, bindsNone) {
		t.Fatal("a launch failed")
	}
	nodeOf := map[string]string{}
	for _, pod := range pods {
		nodeOf[pod.GetName()] = c.told[pod.(*corev1.Pod).UID]
	}
	for _, pod := range pods {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName == "" || got.Status.NominatedNodeName != nodeOf[got.Name] {
			t.Errorf("pod %s nominated to %q, want the node launched for it, %q", got.Name, got.Status.NominatedNodeName, nodeOf[got.Name])
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != corev1.PodReasonUnschedulable {
			t.Errorf("pod %s conditions %v, want kube-scheduler's as they were", got.Name, got.Status.Conditions)
		}
	}
	if released != len(names) || nominatedAfterRelease {
		t.Errorf("%d nodes released, a pod nominated after a release: %t; want %d released after every nomination", released, nominatedAfterRelease, len(names))
	}
}

// TestPlannedOntoNodes: pods planned onto the room of nodes still launching are nominated at
// once; those planned onto an open node are not (kube-scheduler just found no room there), nor
// those of the plan's new nodes (named by the plan only), nominated once their nodes exist.
func TestPlannedOntoNodes(t *testing.T) {
	existing, launching, onNew := builders.Pod(builders.PodOptions{Name: "existing"}), builders.Pod(builders.PodOptions{Name: "launching"}), builders.Pod(builders.PodOptions{Name: "new"})
	results := &scheduling.Results{Bindings: []scheduling.Binding{
		{Pod: existing, NodeName: "ready"}, {Pod: onNew, NodeName: "karpenter-new-node-0"}, {Pod: launching, NodeName: "launching"},
	}}
	got := plannedOntoNodes(results, map[string]string{"launching": "default"})
	want := []nomination{{pod: launching, node: "launching"}}
	if !slices.Equal(got, want) {
		t.Errorf("nominations %v, want %v", got, want)
	}
}

// TestRenominations: a pod kube-scheduler took its nomination from is nominated again to the
// same node while that node is still launching, and counted there rather than planned anew;
// once its node is open it is planned again. Pods bound or gone are forgotten.
func TestRenominations(t *testing.T) {
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{notReady}})
	open := builders.Node(builders.NodeOptions{Name: "open", Ready: corev1.ConditionTrue})
	pod := func(name string, o builders.PodOptions) corev1.Pod {
		o.Name = name
		p := builders.Pod(o)
		p.UID = types.UID(name)
		return *p
	}
	stillNominated := pod("still-nominated", builders.PodOptions{Unschedulable: true})
	stillNominated.Status.NominatedNodeName = "launching"
	c, _, _ := launchingController(t, interceptor.Funcs{})
	c.nominated = map[types.UID]string{"cleared": "launching", "cleared-open": "open", "still-nominated": "launching", "bound": "open", "gone": "launching"}
	snapshot := &state.Snapshot{
		Nodes: []corev1.Node{*launching, *open},
		Pods: []corev1.Pod{
			pod("cleared", builders.PodOptions{Unschedulable: true}),
			pod("cleared-open", builders.PodOptions{Unschedulable: true}),
			stillNominated,
			pod("bound", builders.PodOptions{NodeName: "open", Phase: corev1.PodRunning}),
			pod("never-nominated", builders.PodOptions{Unschedulable: true}),
		},
	}
	got := c.renominations(snapshot)
	if len(got) != 1 || got[0].pod.Name != "cleared" || got[0].node != "launching" || got[0].pod.Status.NominatedNodeName != "" {
		t.Errorf("renominations %v, want cleared to launching (as read, not nominated)", got)
	}
	var pending []string
	for _, p := range snapshot.Pending() {
		pending = append(pending, p.Name)
	}
	if want := []string{"cleared-open", "never-nominated"}; !slices.Equal(pending, want) {
		t.Errorf("pending %v, want %v: the pod nominated again counts on its node", pending, want)
	}
	if want := map[types.UID]string{"cleared": "launching", "cleared-open": "open", "still-nominated": "launching"}; !maps.Equal(c.nominated, want) {
		t.Errorf("remembered %v, want %v", c.nominated, want)
	}
}

// TestRenominate: a pod kube-scheduler took the nomination from is nominated again at once to
// the node it was last nominated to while that node is launching; otherwise it is left to the
// next pass.
func TestRenominate(t *testing.T) {
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{notReady}})
	open := builders.Node(builders.NodeOptions{Name: "open", Ready: corev1.ConditionTrue})
	lifecycleTaint := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	turningReady := builders.Node(builders.NodeOptions{Name: "turning-ready", Ready: corev1.ConditionTrue, Taints: []corev1.Taint{lifecycleTaint}})
	failed := builders.Node(builders.NodeOptions{Name: "failed", Ready: corev1.ConditionFalse, Taints: []corev1.Taint{lifecycleTaint}})
	deleting := builders.Node(builders.NodeOptions{Name: "deleting", Taints: []corev1.Taint{notReady}})
	deleting.Finalizers = []string{v1alpha5.TerminationFinalizer}
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pod := func(name string) *corev1.Pod {
		p := builders.Pod(builders.PodOptions{Name: name, Unschedulable: true})
		p.UID = types.UID(name)
		return p
	}
	stillNominated := pod("still-nominated")
	stillNominated.Status.NominatedNodeName = "launching"
	for _, tc := range []struct {
		pod         *corev1.Pod
		remembered  string
		renominated bool
		nominatedTo string
	}{
		{pod: pod("cleared"), remembered: "launching", renominated: true, nominatedTo: "launching"},
		{pod: pod("node-turning-ready"), remembered: "turning-ready", renominated: true, nominatedTo: "turning-ready"},
		{pod: pod("node-ready"), remembered: "open"},
		{pod: pod("node-failed"), remembered: "failed"},
		{pod: pod("node-gone"), remembered: "gone"},
		{pod: pod("node-deleting"), remembered: "deleting"},
		{pod: pod("never-nominated")},
		{pod: stillNominated, remembered: "launching", nominatedTo: "launching"},
	} {
		t.Run(tc.pod.Name, func(t *testing.T) {
			c, _, kube := launchingController(t, interceptor.Funcs{}, launching.DeepCopy(), open.DeepCopy(), turningReady.DeepCopy(), failed.DeepCopy(), deleting.DeepCopy(), tc.pod.DeepCopy())
			if tc.remembered != "" {
				c.nominated[tc.pod.UID] = tc.remembered
			}
			renominated, err := c.renominate(context.Background(), client.ObjectKeyFromObject(tc.pod))
			if err != nil || renominated != tc.renominated {
				t.Fatalf("renominated %t, %v; want %t", renominated, err, tc.renominated)
			}
			got := &corev1.Pod{}
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(tc.pod), got); err != nil {
				t.Fatal(err)
			}
			if got.Status.NominatedNodeName != tc.nominatedTo {
				t.Errorf("nominated to %q, want %q", got.Status.NominatedNodeName, tc.nominatedTo)
			}
		})
	}
}

// TestDisplacedNominationIsPlannedAgain: kube-scheduler gave the room of a pod's node to
// another pod, and the pod's nomination to that node, cleared at kube-scheduler's attempt, was
// written again after its last one (TestAllocator's limits subtest, once in CI). While pods we
// nominated to an open node are unbound, a pass looks again; once the node has no room left for
// the pod, the pass clears its nomination and plans it anew: a node of its own, or, the
// limits allowing none, an Unprovisionable Event saying so.
func TestDisplacedNominationIsPlannedAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits corev1.ResourceList
	}{
		{name: "a node launched for it"},
		{name: "the limits allow none", limits: builders.Resources("cpu", "2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Limits: tc.limits})
			s := newPasses(t, Options{}, interceptor.Funcs{}, func(cloudprovider.LaunchRequest) bool { return false }, p)
			a := s.pending(t, nodeSized, "a")[0]
			s.pass(t)
			launched := s.nodes(t)
			if len(launched) != 1 {
				t.Fatalf("%d nodes, want a's", len(launched))
			}
			// The node serves: its launch's taints lifted, Ready, initialized by its NodeClaim.
			node := launched[0].DeepCopy()
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, isLaunchingOrConditionTaint)
			node.Labels[v1.NodeInitializedLabelKey] = "true"
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			if err := s.kube.Update(t.Context(), node); err != nil {
				t.Fatal(err)
			}
			if err := s.kube.Status().Update(t.Context(), node); err != nil {
				t.Fatal(err)
			}
			if got := nominatedTo(t, s.kube, a); got != node.Name {
				t.Fatalf("a nominated to %q, want %s", got, node.Name)
			}
			if retry, err := s.c.provision(t.Context(), false); err != nil || !retry {
				t.Errorf("a pass with a unbound on its open node: retry %t, %v; want a retry", retry, err)
			}
			s.settle(t)
			// kube-scheduler binds b there instead.
			o := nodeSized
			o.Name, o.NodeName, o.Phase = "b", node.Name, corev1.PodRunning
			b := builders.Pod(o)
			b.UID = "b"
			if err := s.kube.Create(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			s.pass(t)
			got := nominatedTo(t, s.kube, a)
			if tc.limits == nil {
				if calls := s.cloud.CreateCalls(); len(calls) != 2 || got == "" || got == node.Name {
					t.Errorf("%d create calls, a nominated to %q; want a second launch, a nominated to its node", len(calls), got)
				}
				// kube-scheduler binds a there: the passes ask for no more looks.
				bound := &corev1.Pod{}
				if err := s.kube.Get(t.Context(), client.ObjectKeyFromObject(a), bound); err != nil {
					t.Fatal(err)
				}
				bound.Spec.NodeName, bound.Status.Phase = got, corev1.PodRunning
				if err := s.kube.Update(t.Context(), bound); err != nil {
					t.Fatal(err)
				}
				eventually.Holds(t, "a pass asking for no retry, a bound", func() (bool, string, error) {
					retry, err := s.c.provision(t.Context(), false)
					s.settle(t)
					return !retry, fmt.Sprintf("retry %t", retry), err
				})
				return
			}
			if calls := s.cloud.CreateCalls(); len(calls) != 1 || got != "" {
				t.Errorf("%d create calls, a nominated to %q; want no second launch, a's nomination cleared", len(calls), got)
			}
			if !recorded(s.c.recorder.(*record.FakeRecorder), ReasonUnprovisionable, "limits") {
				t.Error("no Unprovisionable Event mentioning the limits")
			}
		})
	}
}

func isLaunchingOrConditionTaint(taint corev1.Taint) bool {
	return nodes.IsLaunchingTaint(taint) || nodes.IsConditionTaint(taint)
}

func nominatedTo(t *testing.T, kube client.Client, pod *corev1.Pod) string {
	t.Helper()
	current := &corev1.Pod{}
	if err := kube.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
		t.Fatal(err)
	}
	return current.Status.NominatedNodeName
}

// recorded drains the recorder's Events and says whether one was of reason and mentioned text.
func recorded(recorder *record.FakeRecorder, reason, text string) bool {
	found := false
	for {
		select {
		case e := <-recorder.Events:
			found = found || strings.Contains(e, reason) && strings.Contains(e, text)
		default:
			return found
		}
	}
}

// TestUnnominate: a displaced pod's nomination is cleared only if it is still the one read; a
// pod whose nomination moved or that is gone is forgotten and left as read for the next pass;
// a failed clearing leaves the pod nominated, to us and in the snapshot.
func TestUnnominate(t *testing.T) {
	for _, tc := range []struct {
		name string
		// inAPI is the pod's nomination in the API server, "-" for no pod.
		inAPI string
		// boundTo and uid are the pod's in the API server, when set.
		boundTo, uid               string
		patchErr                   error
		wantAPI                    string
		wantShown                  string
		remembered, changed, fails bool
	}{
		{name: "still nominated there: cleared", inAPI: "open", wantAPI: "", wantShown: ""},
		{name: "nominated elsewhere since: left", inAPI: "other", wantAPI: "other", wantShown: "open", changed: true},
		{name: "gone", inAPI: "-", wantShown: "open", changed: true},
		{name: "bound since: cleared, not planned again", inAPI: "open", boundTo: "open", wantAPI: "", wantShown: "open", changed: true},
		{name: "made anew under its name: left", inAPI: "open", uid: "a-again", wantAPI: "open", wantShown: "open", changed: true},
		{name: "the clearing fails", inAPI: "open", patchErr: fmt.Errorf("injected"), wantAPI: "open", wantShown: "open", remembered: true, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			funcs := interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if tc.patchErr != nil {
					return tc.patchErr
				}
				err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				if err != nil && !apierrors.IsNotFound(err) {
					// kube-apiserver answers a JSON patch it cannot apply so (the fake client
					// returns jsonpatch's own error; TestRemoveTaintPatchOnTheAPIServer).
					return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
				}
				return err
			}}
			s := newPasses(t, Options{}, funcs, func(cloudprovider.LaunchRequest) bool { return false })
			pod := builders.Pod(builders.PodOptions{Name: "a", Unschedulable: true})
			pod.UID = "a"
			if tc.inAPI != "-" {
				created := pod.DeepCopy()
				created.Status.NominatedNodeName, created.Spec.NodeName = tc.inAPI, tc.boundTo
				if tc.uid != "" {
					created.UID = types.UID(tc.uid)
				}
				if err := s.kube.Create(t.Context(), created); err != nil {
					t.Fatal(err)
				}
			}
			s.c.nominated[pod.UID] = "open"
			shown := pod.DeepCopy()
			shown.Status.NominatedNodeName = "open"
			changed, err := s.c.unnominate(t.Context(), []*corev1.Pod{shown})
			if (err != nil) != tc.fails || changed != tc.changed {
				t.Errorf("changed %t, %v; want changed %t, failing %t", changed, err, tc.changed, tc.fails)
			}
			if _, ok := s.c.nominated[pod.UID]; ok != tc.remembered {
				t.Errorf("remembered as nominated: %t, want %t", ok, tc.remembered)
			}
			if shown.Status.NominatedNodeName != tc.wantShown {
				t.Errorf("the snapshot shows it nominated to %q, want %q", shown.Status.NominatedNodeName, tc.wantShown)
			}
			if tc.inAPI != "-" {
				if got := nominatedTo(t, s.kube, pod); got != tc.wantAPI {
					t.Errorf("nominated to %q in the API server, want %q", got, tc.wantAPI)
				}
			}
		})
	}
}
