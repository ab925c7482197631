package interruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/test/counters"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestInterruptedNodesCountedDisruptedOnce: a node deleted for an interruption counts once in
// karpenter_nodeclaims_disrupted_total, under upstream's reason for the message's kind, its
// Provisioner's name and capacity type; a second message about the same instance in the same
// batch, or a message about a node the API server has already seen deleted while the cache has
// not, counts nothing.
func TestInterruptedNodesCountedDisruptedOnce(t *testing.T) {
	for _, tc := range []struct {
		pool     string
		messages []cloudprovider.InterruptionMessage
		// deletedBefore: the API server has the node deleted already, the cache not yet.
		deletedBefore bool
		wantReason    string
		want          float64
	}{
		{pool: "spot", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionSpot}}, wantReason: "spot_interrupted", want: 1},
		{pool: "maintenance", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionScheduledChange}}, wantReason: "scheduled_change", want: 1},
		{pool: "stopping", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionStateChange, State: "stopping"}}, wantReason: "instance_stopped", want: 1},
		{pool: "stopped", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionStateChange, State: "stopped"}}, wantReason: "instance_stopped", want: 1},
		{pool: "shutting-down", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionStateChange, State: "shutting-down"}}, wantReason: "instance_terminated", want: 1},
		{pool: "two-messages", messages: []cloudprovider.InterruptionMessage{
			{Kind: cloudprovider.InterruptionSpot},
			{Kind: cloudprovider.InterruptionStateChange, State: "stopping"},
		}, wantReason: "spot_interrupted", want: 1},
		{pool: "deleted-already", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionSpot}}, deletedBefore: true, wantReason: "spot_interrupted", want: 0},
		{pool: "rebalance", messages: []cloudprovider.InterruptionMessage{{Kind: cloudprovider.InterruptionRebalance}}, wantReason: "rebalance_recommendation", want: 0},
	} {
		t.Run(tc.pool, func(t *testing.T) {
			node := karpenterNode(tc.pool, "i-0000000000000000a")
			node.Labels[v1alpha5.ProvisionerNameLabelKey] = tc.pool
			apiServer := kubefake.NewClientBuilder().WithObjects(node.DeepCopy()).Build()
			cache := kubefake.NewClientBuilder().WithObjects(node.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
				// The cache's client writes to the API server; its reads stay behind.
				Delete: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					return apiServer.Delete(ctx, obj, opts...)
				},
			}).Build()
			if tc.deletedBefore {
				if err := apiServer.Delete(t.Context(), node.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			h := newHarnessReading(t, cache, apiServer)
			labels := map[string]string{"reason": tc.wantReason, "nodepool": tc.pool, "capacity_type": "spot"}
			disrupted := counters.MarkNow(t, "karpenter_nodeclaims_disrupted_total", labels)
			anyReason := counters.MarkNow(t, "karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": tc.pool})
			for i, m := range tc.messages {
				m.ID, m.InstanceIDs, m.Time = tc.pool+string(rune('a'+i)), []string{"i-0000000000000000a"}, now
				h.queue.Send(m)
			}
			if err := h.handleAll(t); err != nil {
				t.Fatal(err)
			}
			if h.queue.Len() != 0 {
				t.Errorf("%d messages left, want every one handled", h.queue.Len())
			}
			stored := &corev1.Node{}
			wantDeleted := tc.want == 1 || tc.deletedBefore
			if err := apiServer.Get(t.Context(), client.ObjectKeyFromObject(node), stored); err != nil || (stored.DeletionTimestamp != nil) != wantDeleted {
				t.Errorf("node deleted at %v (%v), want it deleted: %t", stored.DeletionTimestamp, err, wantDeleted)
			}
			if got := disrupted.Increase(); got != tc.want {
				t.Errorf("karpenter_nodeclaims_disrupted_total %v grew by %v, want %v", labels, got, tc.want)
			}
			if got := anyReason.Increase(); got != tc.want {
				t.Errorf("karpenter_nodeclaims_disrupted_total{nodepool=%q} grew by %v over every reason, want %v", tc.pool, got, tc.want)
			}
		})
	}
}
