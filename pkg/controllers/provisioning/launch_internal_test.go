package provisioning

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

func podsWithUIDs(uids ...string) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(uids))
	for i, uid := range uids {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	}
	return pods
}

func TestIdempotencyKeyNamesTheProvisionerPodsAndTakenNodes(t *testing.T) {
	key := idempotencyKey("default", podsWithUIDs("a", "b"))
	if got := idempotencyKey("default", podsWithUIDs("b", "a")); got != key {
		t.Errorf("the same pods in another order give another key: %s, %s", got, key)
	}
	if got := untakenKey(key, nil); got != key {
		t.Errorf("no taken node changes the key: %s, %s", got, key)
	}
	taken := untakenKey(key, []string{"node-1", "node-2"})
	if got := untakenKey(key, []string{"node-2", "node-1"}); got != taken {
		t.Errorf("the same taken nodes in another order give another key: %s, %s", got, taken)
	}
	for name, other := range map[string]string{
		"another provisioner": idempotencyKey("spot", podsWithUIDs("a", "b")),
		"another pod":         idempotencyKey("default", podsWithUIDs("a", "c")),
		"fewer pods":          idempotencyKey("default", podsWithUIDs("a")),
		"a taken node":        taken,
	} {
		if other == key {
			t.Errorf("%s gives the same key", name)
		}
	}
	if untakenKey(key, []string{"node-1"}) == taken {
		t.Error("fewer taken nodes give the same key")
	}
	for _, k := range []string{key, taken} {
		if len(k) > 64 {
			t.Errorf("key %q is longer than the 64 characters an EC2 client token takes", k)
		}
	}
}

func TestLaunchUntakenRetriesGetTheFirstInstanceUnlessThePlanSawItTaken(t *testing.T) {
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	it := fake.DefaultInstanceTypes()[0]
	request := cloudprovider.LaunchRequest{ProvisionerName: "default", Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		IdempotencyKey: idempotencyKey("default", podsWithUIDs("pod"))}
	launch := func(planned ...string) string {
		t.Helper()
		nodes := map[string]corev1.ResourceList{}
		for _, name := range planned {
			nodes[name] = nil
		}
		instances, err := LaunchUntaken(ctx, cloud, request, nodes)
		if err != nil || len(instances) != 1 {
			t.Fatalf("LaunchUntaken = %v, %v", instances, err)
		}
		return instances[0].NodeName
	}
	first := launch()
	for name, got := range map[string]string{
		// The answer was lost: the plan never saw the node.
		"retried before the node existed": launch(),
		// The plan saw the node and put the pod elsewhere: a node for other pods.
		"retried with the node room for other pods": launch("unrelated"),
	} {
		if got != first {
			t.Errorf("%s: launched %s, want the first launch's %s", name, got, first)
		}
	}
	// Another pod took the node: the plan saw it and still wants one for this pod.
	second := launch(first)
	if second == first {
		t.Fatalf("a node another pod took (%s) was given again", first)
	}
	if again := launch(first); again != second {
		t.Errorf("retried after the first node was taken: launched %s, want %s again", again, second)
	}
	if third := launch(first, second); third == first || third == second {
		t.Errorf("both earlier nodes taken: launched %s again", third)
	}
}

func TestCapacityReasonsNameTheFirstOfferingsWithTheCloudsReason(t *testing.T) {
	offering := func(i int) cloudprovider.OfferingKey {
		return cloudprovider.OfferingKey{InstanceType: fmt.Sprintf("m5.%dxlarge", i), Zone: "us-west-2a", CapacityType: "spot"}
	}
	few := &cloudprovider.InsufficientCapacityError{
		Offerings: []cloudprovider.OfferingKey{offering(1), offering(2)},
		Reasons:   map[cloudprovider.OfferingKey]string{offering(1): "InsufficientInstanceCapacity"},
		Err:       errors.New("no capacity"),
	}
	if got, want := capacityReasons(few), "m5.1xlarge in us-west-2a (spot): InsufficientInstanceCapacity, m5.2xlarge in us-west-2a (spot)"; got != want {
		t.Errorf("capacityReasons = %q, want %q", got, want)
	}
	many := &cloudprovider.InsufficientCapacityError{}
	for i := range 20 {
		many.Offerings = append(many.Offerings, offering(i))
	}
	got := capacityReasons(many)
	if !strings.HasSuffix(got, ", and 12 more") || strings.Count(got, "us-west-2a") != 8 {
		t.Errorf("capacityReasons of 20 offerings = %q, want the first 8 and how many more", got)
	}
}

func TestGroupLaunches(t *testing.T) {
	small := &cloudprovider.InstanceType{Name: "small", Offerings: []cloudprovider.Offering{{Zone: "a", CapacityType: "on-demand", Available: true, Price: 1}}}
	large := &cloudprovider.InstanceType{Name: "large", Offerings: []cloudprovider.Offering{{Zone: "a", CapacityType: "on-demand", Available: true, Price: 2}}}
	node := func(provisioner string, types ...*cloudprovider.InstanceType) *scheduling.NewNode {
		return &scheduling.NewNode{Provisioner: provisioner, InstanceTypes: types}
	}
	zoneB := node("default", small)
	zoneB.Requirements = []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}
	for _, tc := range []struct {
		name    string
		nodes   []*scheduling.NewNode
		maxSize int
		want    []int // the size of each group, in order
	}{
		{name: "identical nodes share a call", nodes: []*scheduling.NewNode{node("default", small), node("default", small), node("default", small)}, maxSize: 10, want: []int{3}},
		{name: "the cap splits a group", nodes: []*scheduling.NewNode{node("default", small), node("default", small), node("default", small)}, maxSize: 2, want: []int{2, 1}},
		{name: "another provisioner is another call", nodes: []*scheduling.NewNode{node("default", small), node("spot", small), node("default", small)}, maxSize: 10, want: []int{2, 1}},
		{name: "other candidates are another call", nodes: []*scheduling.NewNode{node("default", small), node("default", small, large), node("default", large, small)}, maxSize: 10, want: []int{1, 2}},
		{name: "requirements that narrow the offerings count", nodes: []*scheduling.NewNode{node("default", small), zoneB}, maxSize: 10, want: []int{1, 1}},
		{name: "a cap under one is one", nodes: []*scheduling.NewNode{node("default", small), node("default", small)}, maxSize: 0, want: []int{1, 1}},
		{name: "nothing to launch", maxSize: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, g := range groupLaunches(tc.nodes, tc.maxSize) {
				got = append(got, len(g.nodes))
				for _, n := range g.nodes {
					if n.Provisioner != g.provisioner {
						t.Errorf("node of %s in a group of %s", n.Provisioner, g.provisioner)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("group sizes %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLaunchGroupSize(t *testing.T) {
	for _, tc := range []struct {
		nodes, concurrency, want int
	}{
		{nodes: 1, concurrency: 10, want: minLaunchGroup},
		{nodes: 8, concurrency: 10, want: minLaunchGroup},
		{nodes: 100, concurrency: 10, want: 10},
		{nodes: 500, concurrency: 10, want: 50},
		{nodes: 501, concurrency: 10, want: 51},
		{nodes: 30, concurrency: 1, want: 30},
		{nodes: 5, concurrency: 0, want: minLaunchGroup},
	} {
		if got := launchGroupSize(tc.nodes, tc.concurrency); got != tc.want {
			t.Errorf("launchGroupSize(%d, %d) = %d, want %d", tc.nodes, tc.concurrency, got, tc.want)
		}
	}
}
