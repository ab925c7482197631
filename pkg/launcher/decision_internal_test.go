package launcher

import (
	"context"
	"errors"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestADecisionWaitsForItsLaunchInProgress: a replacement's decision whose NodeClaim was
// created and never recorded (a crash between the two, which the lifecycle controller resumes)
// is that decision's launch in progress: made again, the decision waits for it, and no second
// instance is launched. (The code before launched another.)
func TestADecisionWaitsForItsLaunchInProgress(t *testing.T) {
	it := fake.DefaultInstanceTypes()[0]
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	l := New(kubefake.NewClientBuilder().Build(), nil, cloud, 0)
	const decision = "replacing old"
	request := oneNodeRequest(it)
	request.Annotations = map[string]string{DecisionAnnotationKey: decisionDigest(decision)}
	// The crash: the NodeClaim created, the process gone before the launch was recorded.
	_, done, err := l.CreateNodeClaims(t.Context(), request)
	done()
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.LaunchedFor(t.Context(), decision, nil)
	if inProgress := (*LaunchInProgressError)(nil); !errors.As(err, &inProgress) {
		t.Errorf("LaunchedFor: %v, want a LaunchInProgressError", err)
	}
	if calls := len(cloud.CreateCalls()); calls != 0 {
		t.Errorf("%d launches, want none: the decision's launch is under way", calls)
	}
}

// TestADecisionKeepsALaunchItCouldNotReadBack: the cloud launched a replacement's instance and
// could not read it back (its describe failed). The instance runs: its NodeClaim records it and
// stays, the decision is told the launch is in progress, and made again it gets that node once
// the instance is read, without a second launch. (The code before deleted the NodeClaim, leaving
// the instance to garbage collection, and the decision made again launched another.)
func TestADecisionKeepsALaunchItCouldNotReadBack(t *testing.T) {
	it := fake.DefaultInstanceTypes()[0]
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	c := kubefake.NewClientBuilder().Build()
	l := New(c, nil, cloud, 0)
	const decision = "replacing old"
	request := oneNodeRequest(it)
	cloud.SetUnreadLaunches(1)
	_, err := l.LaunchNode(t.Context(), request, decision)
	if inProgress := (*LaunchInProgressError)(nil); !errors.As(err, &inProgress) || inProgress.Instance == "" {
		t.Fatalf("LaunchNode: %v, want a LaunchInProgressError naming the instance", err)
	}
	var list v1.NodeClaimList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Status.ProviderID == "" || list.Items[0].DeletionTimestamp != nil {
		t.Fatalf("nodeclaims %+v, want one recording the instance", list.Items)
	}
	launched, err := l.LaunchedFor(t.Context(), decision, nil)
	if err != nil || launched == nil || launched.NodeClaim.Name != list.Items[0].Name || launched.NodeName == "" {
		t.Fatalf("LaunchedFor: %+v, %v; want nodeclaim %s's node", launched, err, list.Items[0].Name)
	}
	if calls := len(cloud.CreateCalls()); calls != 1 {
		t.Errorf("%d launches, want 1", calls)
	}
}

// TestADecisionFindsItsLaunchTheCacheDoesNotShowYet: a replacement's launch in progress whose
// NodeClaim the cache does not show yet (created a moment before) is found when the decision is
// made again, read from the API server, and no second instance is launched; once it is deleting
// or gone, or its launch failed, it is forgotten and the decision launches anew. (The code before
// read only the cache and found no launch: the decision made again launched a second node.)
func TestADecisionFindsItsLaunchTheCacheDoesNotShowYet(t *testing.T) {
	it := fake.DefaultInstanceTypes()[0]
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	api := kubefake.NewClientBuilder().Build()
	// The cache: it writes through to the API server and lists no NodeClaim yet.
	cached := interceptor.NewClient(api, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*v1.NodeClaimList); ok {
			return nil
		}
		return c.List(ctx, list, opts...)
	}})
	l := New(cached, api, cloud, 0)
	const decision = "replacing old"
	request := oneNodeRequest(it)
	cloud.SetUnreadLaunches(1)
	_, err := l.LaunchNode(t.Context(), request, decision)
	inProgress := (*LaunchInProgressError)(nil)
	if !errors.As(err, &inProgress) {
		t.Fatalf("LaunchNode: %v, want a LaunchInProgressError", err)
	}
	launched, err := l.LaunchedFor(t.Context(), decision, nil)
	if err != nil || launched == nil || launched.NodeClaim.Name != inProgress.NodeClaim {
		t.Fatalf("LaunchedFor: %+v, %v; want nodeclaim %s's node", launched, err, inProgress.NodeClaim)
	}
	if calls := len(cloud.CreateCalls()); calls != 1 {
		t.Errorf("%d launches, want 1", calls)
	}
	remembered := func(decision string) bool {
		_, ok := l.created.unshown(decisionDigest(decision), nil)
		return ok
	}
	// Deleting (its finalizer holds it): no launch to find, and forgotten.
	if err := api.Delete(t.Context(), launched.NodeClaim); err != nil {
		t.Fatal(err)
	}
	if launched, err := l.LaunchedFor(t.Context(), decision, nil); launched != nil || err != nil || remembered(decision) {
		t.Errorf("LaunchedFor after the nodeclaim's deletion: %+v, %v (remembered %t); want none, forgotten", launched, err, remembered(decision))
	}
	// Gone from the API server.
	const another = "replacing another"
	cloud.SetUnreadLaunches(1)
	if _, err := l.LaunchNode(t.Context(), request, another); !errors.As(err, &inProgress) {
		t.Fatalf("LaunchNode: %v, want a LaunchInProgressError", err)
	}
	gone := &v1.NodeClaim{}
	if err := api.Get(t.Context(), client.ObjectKey{Name: inProgress.NodeClaim}, gone); err != nil {
		t.Fatal(err)
	}
	gone.Finalizers = nil
	if err := api.Update(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	if launched, err := l.LaunchedFor(t.Context(), another, nil); launched != nil || err != nil || remembered(another) {
		t.Errorf("LaunchedFor after the nodeclaim is gone: %+v, %v (remembered %t); want none, forgotten", launched, err, remembered(another))
	}
	// A launch that got no instance deletes its NodeClaim: nothing to remember.
	const failing = "replacing a third"
	cloud.SetInsufficientCapacity(cloudprovider.OfferingKey{InstanceType: it.Name, Zone: it.Offerings[0].Zone, CapacityType: it.Offerings[0].CapacityType})
	if _, err := l.LaunchNode(t.Context(), request, failing); err == nil || remembered(failing) {
		t.Errorf("LaunchNode with no capacity: %v (remembered %t); want an error, forgotten", err, remembered(failing))
	}
}

// oneNodeRequest is a request for one node of type it, of the provisioner "default".
func oneNodeRequest(it *cloudprovider.InstanceType) Request {
	return Request{Pool: Pool{Provisioner: builders.Provisioner(builders.ProvisionerOptions{Name: "default"})},
		Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes:      []*scheduling.NewNode{{Pool: pools.Provisioner("default"), InstanceTypes: []*cloudprovider.InstanceType{it}}}}
}
