package provisioning

import (
	"context"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestFirstPassSeesTheLaunchesResumedBeforeIt: a controller killed while its launch was in
// flight left a NodeClaim whose instance the cloud launched but that recorded none. The
// restarted controller resumes the launch and records the instance; its cache shows that write
// a few reads later. The first pass waits for it, finds the pod's room on that NodeClaim, and
// launches nothing. (It planned on the stale read and launched a second node for the pod: the
// e2e TestControllerKilledMidBatchLaunchesExactlyTheNeededInstances saw six instances for five
// pods so.)
func TestFirstPassSeesTheLaunchesResumedBeforeIt(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	var mu sync.Mutex
	// stale is the NodeClaims as the first write of one found them; the cache shows them so for
	// lag more reads.
	var stale *v1.NodeClaimList
	lag := 0
	lagging := interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok {
				mu.Lock()
				if stale == nil {
					stale = &v1.NodeClaimList{}
					if err := c.List(ctx, stale); err != nil {
						mu.Unlock()
						return err
					}
					lag = 3
				}
				mu.Unlock()
			}
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			mu.Lock()
			defer mu.Unlock()
			if nodeClaims, ok := list.(*v1.NodeClaimList); ok && lag > 0 {
				lag--
				stale.DeepCopyInto(nodeClaims)
				return nil
			}
			return c.List(ctx, list, opts...)
		},
	}
	s := newPasses(t, Options{}, lagging, func(cloudprovider.LaunchRequest) bool { return false }, p)
	s.pending(t, nodeSized, "a")

	// The stopped controller: its NodeClaim created and launched, the instance not recorded.
	it := fake.DefaultInstanceTypes()[0]
	request := launcher.Request{Pool: launcher.Pool{Provisioner: p}, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes: []*scheduling.NewNode{{Pool: pools.Provisioner("default"), InstanceTypes: []*cloudprovider.InstanceType{it}}}}
	stopped := launcher.New(s.kube, nil, s.cloud, 0)
	nodeClaims, done, err := stopped.CreateNodeClaims(t.Context(), request)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Launch(t.Context(), request, nodeClaims); err != nil {
		t.Fatal(err)
	}
	done()

	s.c.resumeLaunches(t.Context())
	s.pass(t)
	instances, err := s.cloud.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(instances) != 1 {
		t.Errorf("%d instances for one pod, want the resumed launch's only", len(instances))
	}
}

// TestANodeClaimTheCacheDoesNotShowYetIsNotGone: the launch of a batch waits for its NodeClaims'
// nodes to register, reading the NodeClaims from the cache, which may not show one created a
// moment ago yet. Such a NodeClaim is not gone (the API server has it): its launch waits on and
// counts no failure. (It counted one and planned the pod again, four at once in an e2e run.)
func TestANodeClaimTheCacheDoesNotShowYetIsNotGone(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	var mu sync.Mutex
	unseen := 5
	notYetCached := interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok {
				mu.Lock()
				defer mu.Unlock()
				if unseen > 0 {
					unseen--
					return apierrors.NewNotFound(schema.GroupResource{Group: v1.SchemeGroupVersion.Group, Resource: "nodeclaims"}, key.Name)
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}
	s := newPasses(t, Options{}, notYetCached, func(cloudprovider.LaunchRequest) bool { return false }, p)
	s.pending(t, nodeSized, "a")
	notRegistered := func() float64 {
		var m dto.Metric
		if err := launchErrors.WithLabelValues(ReasonNodeNotRegistered).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	before := notRegistered()
	s.pass(t)
	if got := notRegistered() - before; got != 0 {
		t.Errorf("%v launches failed as not registered, want none", got)
	}
	s.pass(t)
	instances, err := s.cloud.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(instances) != 1 {
		t.Errorf("%d instances for one pod, want one", len(instances))
	}
}

// TestGoneNodeClaimsStopsAtTheFirstFailedRead: while the API server cannot be read, a pass asked
// it about every NodeClaim it held room for, each read waiting for its own timeout and logging
// a line. The first failure ends the asking, and nothing unread is taken for gone.
func TestGoneNodeClaimsStopsAtTheFirstFailedRead(t *testing.T) {
	var reads int
	unreachable := interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			if key.Name == "gone" {
				return apierrors.NewNotFound(schema.GroupResource{Group: v1.SchemeGroupVersion.Group, Resource: "nodeclaims"}, key.Name)
			}
			return apierrors.NewServiceUnavailable("etcd is down")
		},
	}
	c := &Controller{reader: kubefake.NewClientBuilder().WithInterceptorFuncs(unreachable).Build()}
	gone := c.goneNodeClaims(t.Context(), []string{"gone", "a", "b", "c"})
	if !gone.Equal(sets.New("gone")) {
		t.Errorf("gone %v, want [gone]", sets.List(gone))
	}
	if reads != 2 {
		t.Errorf("%d reads, want 2: none after the first that failed", reads)
	}
}
