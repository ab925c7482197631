package provisioning

import (
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestBatchNodesOpenTogether: every Node of a batch registers held (the hold is a startup taint
// of its NodeClaim) and is released only after the batch's last launch, so kube-scheduler binds
// no pod before it sees every planned node.
func TestBatchNodesOpenTogether(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	var mu sync.Mutex
	var createdHeld, created int
	var releasedBeforeLastCreate bool
	released := 0
	c, cloud, kube := launchingController(t, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			if node, ok := obj.(*corev1.Node); ok {
				created++
				if slices.Contains(node.Spec.Taints, launchingTaint) {
					createdHeld++
				}
			}
			releasedBeforeLastCreate = releasedBeforeLastCreate || released > 0
			mu.Unlock()
			return cl.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				mu.Lock()
				released++
				mu.Unlock()
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}, p)
	n := plannedNode(t, cloud, p)
	var plan []*scheduling.NewNode
	for _, name := range []string{"a", "b", "c"} {
		// Each node is launched for pods of its own: the same pods would be the same launch.
		pod := builders.Pod(builders.PodOptions{Name: name, Labels: map[string]string{"app": "spread"},
			TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, map[string]string{"app": "spread"})}})
		pod.UID = types.UID(name)
		plan = append(plan, &scheduling.NewNode{Pool: n.Pool, InstanceTypes: n.InstanceTypes, Pods: []*corev1.Pod{pod}})
	}
	plans := map[pools.Key]*poolPlan{pools.Provisioner(p.Name): {key: pools.Provisioner(p.Name), stored: p, updated: p.DeepCopy(), nodes: map[string]corev1.ResourceList{}}}
	batch, launches, refused := c.reserveAll(context.Background(), plan, plans)
	if refused || c.launchBatch(context.Background(), batch, launches, bindsNone) {
		t.Fatal("a launch failed")
	}
	var list corev1.NodeList
	if err := kube.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 || createdHeld != 3 || released != 3 || releasedBeforeLastCreate {
		t.Fatalf("%d nodes, %d of %d created held, %d released, one released before the last was created: %t; want 3 created held, released after",
			len(list.Items), createdHeld, created, released, releasedBeforeLastCreate)
	}
	for _, node := range list.Items {
		if slices.ContainsFunc(node.Spec.Taints, isLaunchingTaint) {
			t.Errorf("node %s taints %v, want the hold lifted", node.Name, node.Spec.Taints)
		}
	}
}

// TestLeftoverHoldsAreReleased: a node a stopped controller left held is opened by the next
// pass; one a batch still in flight holds is not, its batch opens it after its last launch.
func TestLeftoverHoldsAreReleased(t *testing.T) {
	left := builders.Node(builders.NodeOptions{Name: "left", Taints: []corev1.Taint{notReady, launchingTaint}})
	open := builders.Node(builders.NodeOptions{Name: "open", Taints: []corev1.Taint{notReady}})
	inFlight := builders.Node(builders.NodeOptions{Name: "in-flight", Taints: []corev1.Taint{notReady, launchingTaint}})
	patched := map[string]int{}
	c, _, kube := launchingController(t, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patched[obj.GetName()]++
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}, left, open, inFlight)
	snapshot := &state.Snapshot{Nodes: []corev1.Node{*left, *open, *inFlight}}
	if err := c.releaseLeftovers(context.Background(), snapshot, sets.New(inFlight.Name)); err != nil {
		t.Fatal(err)
	}
	current := &corev1.Node{}
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(left), current); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(current.Spec.Taints, []corev1.Taint{notReady}) || patched["left"] != 1 || patched["open"] != 0 || patched["in-flight"] != 0 {
		t.Errorf("left's taints %v, patches %v; want left released once, open and in-flight untouched", current.Spec.Taints, patched)
	}
}

// TestReleaseRereadsChangedTaints: when the taints changed since the node was read (the
// readiness controller lifted not-ready), the patch's test fails and the release reads the
// node again rather than removing another taint.
func TestReleaseRereadsChangedTaints(t *testing.T) {
	stale := builders.Node(builders.NodeOptions{Name: "n", Taints: []corev1.Taint{notReady, launchingTaint}})
	current := builders.Node(builders.NodeOptions{Name: "n", Taints: []corev1.Taint{launchingTaint}})
	c, _, kube := launchingController(t, interceptor.Funcs{}, current)
	if err := c.release(context.Background(), []*corev1.Node{stale}); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(current), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 0 {
		t.Errorf("taints %v, want none", got.Spec.Taints)
	}
}

func TestDependsOnDomains(t *testing.T) {
	labels := map[string]string{"app": "x"}
	for _, tc := range []struct {
		name string
		pod  builders.PodOptions
		want bool
	}{
		{name: "plain pods fit any node planned for them", pod: builders.PodOptions{NodeSelector: map[string]string{"zone": "a"}}, want: false},
		{name: "topology spread", pod: builders.PodOptions{TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelHostname, corev1.ScheduleAnyway, labels)}}, want: true},
		{name: "pod affinity", pod: builders.PodOptions{PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, labels)}}, want: true},
		{name: "pod anti-affinity", pod: builders.PodOptions{PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, labels)}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dependsOnDomains(builders.Pod(tc.pod)); got != tc.want {
				t.Errorf("dependsOnDomains = %t, want %t", got, tc.want)
			}
		})
	}
}
