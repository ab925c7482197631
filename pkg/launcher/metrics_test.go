package launcher_test

import (
	"testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/counters"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestNodeClaimsCountedCreatedAndLaunchedOnce: every NodeClaim the launcher creates counts once
// in karpenter_nodeclaims_created_total, under the request's reason (provisioned when it gives
// none) and the Provisioner's name as nodepool, and once in _launched_total when its instance is
// recorded; a replacement's decision launched again finds its launch made and counts nothing.
func TestNodeClaimsCountedCreatedAndLaunchedOnce(t *testing.T) {
	it := fake.DefaultInstanceTypes()[0]
	candidates := []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}
	for _, tc := range []struct {
		pool, reason, wantReason string
		// nodes are launched as one group (as provisioning launches them), without a decision;
		// zero: one node for a decision, launched twice (as a replacement is after a crash).
		nodes int
	}{
		{pool: "counted-provisioned", reason: "", wantReason: metrics.ReasonProvisioned, nodes: 3},
		{pool: "counted-consolidation", reason: metrics.ReasonUnderutilized, wantReason: "underutilized"},
		{pool: "counted-expiry", reason: metrics.ReasonExpired, wantReason: "expired"},
	} {
		t.Run(tc.pool, func(t *testing.T) {
			l := launcher.New(kubefake.NewClientBuilder().Build(), nil, fake.NewInstanceProvider(fake.InstanceProviderOptions{}), 0)
			request := launcher.Request{Pool: launcher.Pool{Provisioner: builders.Provisioner(builders.ProvisionerOptions{Name: tc.pool})}, Candidates: candidates, Reason: tc.reason}
			createdLabels := map[string]string{"reason": tc.wantReason, "nodepool": tc.pool, "min_values_relaxed": "false"}
			created := counters.MarkNow(t, "karpenter_nodeclaims_created_total", createdLabels)
			launched := counters.MarkNow(t, "karpenter_nodeclaims_launched_total", map[string]string{"nodepool": tc.pool})
			want := float64(tc.nodes)
			if tc.nodes == 0 {
				want = 1
				request.Nodes = []*scheduling.NewNode{{Pool: pools.Provisioner(tc.pool), InstanceTypes: []*cloudprovider.InstanceType{it}}}
				// As a replacement launches: its launch made is found before another is made.
				for range 2 {
					found, err := l.LaunchedFor(t.Context(), "replacing old-"+tc.pool, nil)
					if err != nil {
						t.Fatal(err)
					}
					if found != nil {
						continue
					}
					if _, err := l.LaunchNode(t.Context(), request, "replacing old-"+tc.pool); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				for range tc.nodes {
					request.Nodes = append(request.Nodes, &scheduling.NewNode{Pool: pools.Provisioner(tc.pool), InstanceTypes: []*cloudprovider.InstanceType{it}})
				}
				nodeClaims, done, err := l.CreateNodeClaims(t.Context(), request)
				defer done()
				if err != nil {
					t.Fatal(err)
				}
				instances, err := l.Launch(t.Context(), request, nodeClaims)
				if err != nil {
					t.Fatal(err)
				}
				pairs, _ := launcher.Assign(nodeClaims, instances)
				for nc, instance := range pairs {
					if _, err := l.Record(t.Context(), nc, instance, it); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := created.Increase(); got != want {
				t.Errorf("karpenter_nodeclaims_created_total %v grew by %v, want %v", createdLabels, got, want)
			}
			if got := launched.Increase(); got != want {
				t.Errorf("karpenter_nodeclaims_launched_total{nodepool=%q} grew by %v, want %v", tc.pool, got, want)
			}
		})
	}
}
