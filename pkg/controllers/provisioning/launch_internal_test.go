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
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
)

func podsWithUIDs(uids ...string) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(uids))
	for i, uid := range uids {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	}
	return pods
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
	soldOut := &cloudprovider.InstanceType{Name: "sold-out", Offerings: []cloudprovider.Offering{{Zone: "a", CapacityType: "on-demand", Price: 1}}}
	node := func(provisioner string, types ...*cloudprovider.InstanceType) *scheduling.NewNode {
		return &scheduling.NewNode{Pool: pools.Provisioner(provisioner), InstanceTypes: types}
	}
	labelled := func(team string) *scheduling.NewNode {
		n := node("default", small)
		n.Labels = map[string]string{"team": team}
		return n
	}
	notIn := func(zones ...string) *scheduling.NewNode {
		n := node("default", small)
		n.Requirements = []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: zones}}
		return n
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
		{name: "types no offering of which is available change nothing", nodes: []*scheduling.NewNode{node("default", small), node("default", small, soldOut), node("default", small)}, maxSize: 10, want: []int{3}},
		{name: "other labels chosen are another call", nodes: []*scheduling.NewNode{labelled("a"), labelled("b"), labelled("a")}, maxSize: 10, want: []int{2, 1}},
		{name: "a value with a space is one value", nodes: []*scheduling.NewNode{notIn("a b"), notIn("a", "b")}, maxSize: 10, want: []int{1, 1}},
		{name: "requirements that narrow the offerings count", nodes: []*scheduling.NewNode{node("default", small), zoneB}, maxSize: 10, want: []int{1, 1}},
		{name: "a cap under one is one", nodes: []*scheduling.NewNode{node("default", small), node("default", small)}, maxSize: 0, want: []int{1, 1}},
		{name: "nothing to launch", maxSize: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, g := range groupLaunches(tc.nodes, tc.maxSize) {
				got = append(got, len(g.nodes))
				for _, n := range g.nodes {
					if n.Pool != g.pool {
						t.Errorf("node of %s in a group of %s", n.Pool, g.pool)
					}
					// The cloud cannot tell a group's nodes apart.
					if launchKey(n, n.Offerings()) != launchKey(g.nodes[0], g.candidates) {
						t.Errorf("a node keyed %q in a group keyed %q", launchKey(n, n.Offerings()), launchKey(g.nodes[0], g.candidates))
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
