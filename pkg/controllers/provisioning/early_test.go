package provisioning

import (
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
)

func TestEarlyHold(t *testing.T) {
	small := &cloudprovider.InstanceType{Name: "small", Offerings: []cloudprovider.Offering{{Zone: "a", CapacityType: "on-demand", Available: true, Price: 1}}}
	large := &cloudprovider.InstanceType{Name: "large", Offerings: []cloudprovider.Offering{{Zone: "a", CapacityType: "on-demand", Available: true, Price: 2}}}
	nodes := func(n int, it *cloudprovider.InstanceType) []*scheduling.NewNode {
		out := make([]*scheduling.NewNode, n)
		for i := range out {
			out[i] = &scheduling.NewNode{Pool: pools.Provisioner("default"), InstanceTypes: []*cloudprovider.InstanceType{it}}
		}
		return out
	}
	const gap = time.Second
	start := time.Now()
	// pass is one early pass: its filled nodes, how long after the first pass it runs, and how
	// many nodes it should launch.
	type pass struct {
		filled []*scheduling.NewNode
		after  time.Duration
		want   int
	}
	for _, tc := range []struct {
		name   string
		passes []pass
	}{
		{name: "a few filled nodes wait one gap, then launch together with those filled since", passes: []pass{
			{filled: nodes(3, small), want: 0},
			{filled: nodes(5, small), after: gap, want: 5},
		}},
		{name: "a full group launches at once", passes: []pass{
			{filled: nodes(minLaunchGroup, small), want: minLaunchGroup},
		}},
		{name: "held nodes that fill a group launch before the gap", passes: []pass{
			{filled: nodes(4, small), want: 0},
			{filled: nodes(minLaunchGroup+2, small), after: gap / 2, want: minLaunchGroup + 2},
		}},
		{name: "not yet a gap: still held", passes: []pass{
			{filled: nodes(2, small), want: 0},
			{filled: nodes(3, small), after: gap / 2, want: 0},
			{filled: nodes(3, small), after: gap, want: 3},
		}},
		{name: "each launch key is held on its own", passes: []pass{
			{filled: nodes(2, small), want: 0},
			{filled: append(nodes(2, small), nodes(2, large)...), after: gap, want: 2},
			{filled: nodes(2, large), after: 2 * gap, want: 2},
		}},
		{name: "a key with no filled node any more is forgotten: its next nodes wait a gap afresh", passes: []pass{
			{filled: nodes(2, small), want: 0},
			{filled: nil, after: gap / 2},
			{filled: nodes(2, small), after: gap, want: 0},
			{filled: nodes(2, small), after: 2 * gap, want: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h earlyHold
			for i, p := range tc.passes {
				if got := len(h.release(p.filled, start.Add(p.after), gap)); got != p.want {
					t.Errorf("pass %d launched %d nodes, want %d", i, got, p.want)
				}
			}
		})
	}
	t.Run("the closing pass forgets what was held", func(t *testing.T) {
		var h earlyHold
		h.release(nodes(2, small), start, gap)
		h.reset()
		if got := len(h.release(nodes(2, small), start.Add(gap), gap)); got != 0 {
			t.Errorf("launched %d nodes after a reset, want them held a gap afresh", got)
		}
	})
}
