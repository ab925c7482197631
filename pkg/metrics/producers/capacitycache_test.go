package producers

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// countingReader counts the lists of its reader, by kind and selector.
type countingReader struct {
	client.Reader
	lists map[string]int
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	options := (&client.ListOptions{}).ApplyOptions(opts)
	switch list.(type) {
	case *corev1.NodeList:
		r.lists["nodes "+options.LabelSelector.String()]++
	case *corev1.PodList:
		r.lists["pods "+options.FieldSelector.String()]++
	}
	return r.Reader.List(ctx, list, opts...)
}

// cluster is a fake API server with the informer's part played by hand: each change is made,
// then handed to the cache as the event an informer would deliver.
type cluster struct {
	t      *testing.T
	client client.Client
	reader *countingReader
	cache  *CapacityCache
}

func newCluster(t *testing.T, objects ...client.Object) *cluster {
	c := &cluster{t: t, client: newReader(objects...).(client.Client), cache: &CapacityCache{}}
	c.reader = &countingReader{Reader: c.client, lists: map[string]int{}}
	for _, object := range objects {
		c.feed(nil, object)
	}
	return c
}

func (c *cluster) feed(old, updated client.Object) {
	if isNode(old) || isNode(updated) {
		before, _ := old.(*corev1.Node)
		after, _ := updated.(*corev1.Node)
		c.cache.NodeChanged(before, after)
		return
	}
	before, _ := old.(*corev1.Pod)
	after, _ := updated.(*corev1.Pod)
	c.cache.PodChanged(before, after)
}

func isNode(object client.Object) bool {
	_, ok := object.(*corev1.Node)
	return ok
}

func (c *cluster) create(object client.Object) {
	c.t.Helper()
	if err := c.client.Create(context.Background(), object); err != nil {
		c.t.Fatal(err)
	}
	c.feed(nil, object)
}

func (c *cluster) update(object client.Object, change func()) {
	c.t.Helper()
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(object), object); err != nil {
		c.t.Fatal(err)
	}
	old := object.DeepCopyObject().(client.Object)
	change()
	// Nodes and pods have a status subresource: the spec and the status are written apart.
	desired := object.DeepCopyObject().(client.Object)
	if err := c.client.Update(context.Background(), object); err != nil {
		c.t.Fatal(err)
	}
	desired.SetResourceVersion(object.GetResourceVersion())
	if err := c.client.Status().Update(context.Background(), desired); err != nil {
		c.t.Fatal(err)
	}
	c.feed(old, desired)
}

func (c *cluster) delete(object client.Object) {
	c.t.Helper()
	if err := c.client.Delete(context.Background(), object); err != nil {
		c.t.Fatal(err)
	}
	c.feed(object, nil)
}

// produce computes mp through the cache, and fails the test unless the result is the one a
// producer without a cache computes from the same reader.
func (c *cluster) produce(mp *v1alpha1.MetricsProducer) {
	c.t.Helper()
	ctx := context.Background()
	var got, want Result
	var gotErr, wantErr error
	if mp.Spec.ReservedCapacity != nil {
		got, gotErr = built[map[corev1.ResourceName]string]{producer: &ReservedCapacityProducer{Reader: c.reader, Cache: c.cache}, status: statusOfReserved}.produce(ctx, mp)
		want, wantErr = built[map[corev1.ResourceName]string]{producer: &ReservedCapacityProducer{Reader: c.client}, status: statusOfReserved}.produce(ctx, mp)
	} else {
		got, gotErr = built[*v1alpha1.PendingCapacityStatus]{producer: &PendingCapacityProducer{Reader: c.reader, Cache: c.cache}, status: statusOfPending}.produce(ctx, mp)
		want, wantErr = built[*v1alpha1.PendingCapacityStatus]{producer: &PendingCapacityProducer{Reader: c.client}, status: statusOfPending}.produce(ctx, mp)
	}
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		c.t.Fatalf("%s: error %v through the cache, %v without", mp.Name, gotErr, wantErr)
	}
	var gotStatus, wantStatus v1alpha1.MetricsProducerStatus
	got.WriteStatus(&gotStatus)
	want.WriteStatus(&wantStatus)
	if !equality.Semantic.DeepEqual(gotStatus, wantStatus) || !equality.Semantic.DeepEqual(got.Samples, want.Samples) {
		c.t.Fatalf("%s: through the cache %+v %v, without %+v %v", mp.Name, gotStatus, got.Samples, wantStatus, want.Samples)
	}
}

func statusOfReserved(s *v1alpha1.MetricsProducerStatus) *map[corev1.ResourceName]string {
	return &s.ReservedCapacity
}

func statusOfPending(s *v1alpha1.MetricsProducerStatus) **v1alpha1.PendingCapacityStatus {
	return &s.PendingCapacity
}

// reads returns the lists made since the last call.
func (c *cluster) reads() map[string]int {
	lists := c.reader.lists
	c.reader.lists = map[string]int{}
	return lists
}

func TestCapacityCacheReadsOnlyWhatChanged(t *testing.T) {
	groupA, groupB := map[string]string{"group": "a"}, map[string]string{"group": "b"}
	allocatable := builders.Resources("cpu", "8", "memory", "16Gi", "pods", "10")
	a1, a2, b1 := readyNode("a1", groupA, allocatable), readyNode("a2", groupA, allocatable), readyNode("b1", groupB, allocatable)
	p1, p2 := pod("p1", "a1", builders.Resources("cpu", "6", "memory", "4Gi")), pod("p2", "a2", builders.Resources("cpu", "500m", "memory", "1G"))
	q1, unscheduled := pod("q1", "b1", builders.Resources("cpu", "8")), pod("unscheduled", "", builders.Resources("cpu", "1"))
	// Two producers of group a share its reservation; one of group b has its own.
	reservedA1 := producer("a-1", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: groupA}})
	reservedA2 := producer("a-2", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: groupA}})
	reservedB := producer("b", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: groupB}})
	both := map[string]int{"nodes group=a": 1, "nodes group=b": 1}
	plus := func(reads map[string]int, more ...string) map[string]int {
		reads = maps.Clone(reads)
		for _, read := range more {
			reads[read]++
		}
		return reads
	}
	for _, tc := range []struct {
		name string
		// change changes the cluster through c, which hands each change to the cache.
		change func(c *cluster)
		// reads are the lists the three producers make after the change.
		reads map[string]int
	}{
		{name: "nothing changed", change: func(*cluster) {}, reads: map[string]int{}},
		{name: "a node's heartbeat", change: func(c *cluster) {
			node := a1.DeepCopy()
			c.update(node, func() { node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Now()) })
		}, reads: map[string]int{}},
		{name: "an informer's resync", change: func(c *cluster) {
			same := p1.DeepCopy()
			if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(same), same); err != nil {
				t.Fatal(err)
			}
			c.feed(same, same)
		}, reads: map[string]int{}},
		{name: "an unscheduled pod changes", change: func(c *cluster) {
			c.update(unscheduled.DeepCopy(), func() {})
		}, reads: map[string]int{}},
		{name: "a pod starts on a node", change: func(c *cluster) {
			c.create(pod("new", "a1", builders.Resources("cpu", "1")))
		}, reads: plus(both, "pods spec.nodeName=a1")},
		{name: "a pod is bound to a node", change: func(c *cluster) {
			bound := unscheduled.DeepCopy()
			c.update(bound, func() { bound.Spec.NodeName = "a2" })
		}, reads: plus(both, "pods spec.nodeName=a2")},
		{name: "a pod is deleted", change: func(c *cluster) { c.delete(p2.DeepCopy()) }, reads: plus(both, "pods spec.nodeName=a2")},
		{name: "a pod terminates", change: func(c *cluster) {
			done := p1.DeepCopy()
			c.update(done, func() { done.Status.Phase = corev1.PodSucceeded })
		}, reads: plus(both, "pods spec.nodeName=a1")},
		{name: "a pod of another group changes", change: func(c *cluster) { c.delete(q1.DeepCopy()) }, reads: plus(both, "pods spec.nodeName=b1")},
		{name: "a node is cordoned", change: func(c *cluster) {
			node := a1.DeepCopy()
			c.update(node, func() { node.Spec.Unschedulable = true })
		}, reads: both},
		{name: "a node is no longer Ready", change: func(c *cluster) {
			node := a2.DeepCopy()
			c.update(node, func() { node.Status.Conditions[0].Status = corev1.ConditionUnknown })
		}, reads: both},
		{name: "a node's allocatable grows", change: func(c *cluster) {
			node := a2.DeepCopy()
			c.update(node, func() { node.Status.Allocatable = builders.Resources("cpu", "16", "memory", "32Gi", "pods", "20") })
		}, reads: plus(both, "pods spec.nodeName=a2")},
		{name: "a node joins the group", change: func(c *cluster) {
			c.create(readyNode("a3", groupA, allocatable))
		}, reads: plus(both, "pods spec.nodeName=a3")},
		{name: "a node moves to the other group", change: func(c *cluster) {
			node := b1.DeepCopy()
			c.update(node, func() { node.Labels = groupA })
		}, reads: plus(both, "pods spec.nodeName=b1")},
		{name: "a node is deleted", change: func(c *cluster) { c.delete(a2.DeepCopy()) }, reads: both},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, a1.DeepCopy(), a2.DeepCopy(), b1.DeepCopy(), p1.DeepCopy(), p2.DeepCopy(), q1.DeepCopy(), unscheduled.DeepCopy())
			for _, mp := range []*v1alpha1.MetricsProducer{reservedA1, reservedA2, reservedB} {
				c.produce(mp)
			}
			if reads, want := c.reads(), plus(both, "pods spec.nodeName=a1", "pods spec.nodeName=a2", "pods spec.nodeName=b1"); !maps.Equal(reads, want) {
				t.Fatalf("first computation read %v, want %v (each group once)", reads, want)
			}
			tc.change(c)
			for _, mp := range []*v1alpha1.MetricsProducer{reservedA1, reservedA2, reservedB} {
				c.produce(mp)
			}
			if reads := c.reads(); !maps.Equal(reads, tc.reads) {
				t.Errorf("after the change read %v, want %v", reads, tc.reads)
			}
		})
	}
}

func TestCapacityCacheSharesTheUnschedulablePods(t *testing.T) {
	group := map[string]string{"group": "a"}
	a1 := readyNode("a1", group, builders.Resources("cpu", "4", "pods", "10"))
	waiting := pod("waiting", "", builders.Resources("cpu", "2"))
	running := pod("running", "a1", builders.Resources("cpu", "1"))
	pending := []*v1alpha1.MetricsProducer{
		producer("pending-1", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: group}}),
		producer("pending-2", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: group}}),
	}
	// The node shape is read each time pods are pending: twice per round.
	shape := map[string]int{"nodes group=a": 2, "pods spec.nodeName=a1": 2}
	c := newCluster(t, a1, waiting, running)
	for _, step := range []struct {
		name   string
		change func()
		reads  map[string]int
	}{
		{"first computation", func() {}, map[string]int{"nodes group=a": 2, "pods spec.nodeName=a1": 2, "pods spec.nodeName=": 1}},
		{"nothing changed", func() {}, shape},
		{"a bound pod changes", func() { c.delete(running.DeepCopy()) }, shape},
		{"another pod waits", func() { c.create(pod("another", "", builders.Resources("cpu", "3"))) },
			map[string]int{"nodes group=a": 2, "pods spec.nodeName=a1": 2, "pods spec.nodeName=": 1}},
		{"every pod is placed", func() {
			for _, name := range []string{"waiting", "another"} {
				placed := pod(name, "", nil)
				c.update(placed, func() { placed.Spec.NodeName = "a1" })
			}
		}, map[string]int{"pods spec.nodeName=": 1}},
	} {
		step.change()
		for _, mp := range pending {
			c.produce(mp)
		}
		if reads := c.reads(); !maps.Equal(reads, step.reads) {
			t.Errorf("%s: read %v, want %v", step.name, reads, step.reads)
		}
	}
}

func TestCapacityCacheUnfedReadsEveryTime(t *testing.T) {
	group := map[string]string{"group": "a"}
	a1 := readyNode("a1", group, builders.Resources("cpu", "4", "pods", "10"))
	c := newCluster(t)
	// The objects exist, but no informer announced them: a client no informer feeds.
	for _, object := range []client.Object{a1, pod("p", "a1", builders.Resources("cpu", "1"))} {
		if err := c.client.Create(context.Background(), object); err != nil {
			t.Fatal(err)
		}
	}
	mp := producer("reserved", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}})
	for range 2 {
		c.produce(mp)
		if reads, want := c.reads(), map[string]int{"nodes group=a": 1, "pods spec.nodeName=a1": 1}; !maps.Equal(reads, want) {
			t.Errorf("read %v, want %v", reads, want)
		}
	}
}

// TestCapacityCacheFollowsEventsNotTime shows what the cache keeps a value for: until an event,
// however long, and not past one.
func TestCapacityCacheFollowsEventsNotTime(t *testing.T) {
	group := map[string]string{"group": "a"}
	a1 := readyNode("a1", group, builders.Resources("cpu", "4", "pods", "10"))
	c := newCluster(t, a1, pod("p", "a1", builders.Resources("cpu", "1")))
	reserved := func() string {
		t.Helper()
		kept, err := c.cache.reservation(context.Background(), c.reader, group)
		if err != nil {
			t.Fatal(err)
		}
		r := kept.reservations[corev1.ResourceCPU]
		return r.String()
	}
	if got := reserved(); got != "25.00%, 1/4" {
		t.Fatalf("cpu %q", got)
	}
	// A change no event announced yet is not seen...
	unannounced := pod("unannounced", "a1", builders.Resources("cpu", "2"))
	if err := c.client.Create(context.Background(), unannounced); err != nil {
		t.Fatal(err)
	}
	if got := reserved(); got != "25.00%, 1/4" {
		t.Errorf("cpu %q before the event, want the kept 25.00%%, 1/4", got)
	}
	// ...and is, at the next computation after its event.
	c.feed(nil, unannounced)
	if got := reserved(); got != "75.00%, 3/4" {
		t.Errorf("cpu %q after the event, want 75.00%%, 3/4", got)
	}
}

// TestCapacityCacheEventsDuringComputations changes pods while producers compute, as informers
// and workers do at once: once the changes stop, what the cache gives is what the reader holds.
func TestCapacityCacheEventsDuringComputations(t *testing.T) {
	group := map[string]string{"group": "a"}
	c := newCluster(t, readyNode("a1", group, builders.Resources("cpu", "100", "pods", "100")), readyNode("a2", group, builders.Resources("cpu", "100", "pods", "100")))
	mp := producer("reserved", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			created := pod(fmt.Sprintf("p%d", i), []string{"a1", "a2"}[i%2], builders.Resources("cpu", "1"))
			if err := c.client.Create(context.Background(), created); err != nil {
				t.Error(err)
				return
			}
			c.feed(nil, created)
		}
	}()
	var computations sync.WaitGroup
	for range 4 {
		computations.Add(1)
		go func() {
			defer computations.Done()
			for {
				select {
				case <-done:
					return
				default:
					if _, err := c.cache.reservation(context.Background(), c.client, group); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	computations.Wait()
	c.produce(mp)
}
