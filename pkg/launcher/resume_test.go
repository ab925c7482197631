package launcher_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// oneNodeRequest is a launch of one node of the Provisioner, as the first of the fake instance
// types, which it returns.
func oneNodeRequest(provisioner *v1alpha5.Provisioner) (launcher.Request, *cloudprovider.InstanceType) {
	it := fake.DefaultInstanceTypes()[0]
	return launcher.Request{Pool: launcher.Pool{Provisioner: provisioner}, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes: []*scheduling.NewNode{{Pool: pools.Provisioner(provisioner.Name), InstanceTypes: []*cloudprovider.InstanceType{it}}}}, it
}

// createdForALaunch is a Provisioner "crash" and the NodeClaims the launcher first created for a
// request of one node of it; done ends the launch, as a controller killed then would.
func createdForALaunch(t *testing.T) (client.Client, *fake.InstanceProvider, *launcher.Launcher, launcher.Request, *cloudprovider.InstanceType, []*v1.NodeClaim, func()) {
	t.Helper()
	provisioner := builders.Provisioner(builders.ProvisionerOptions{Name: "crash"})
	c := kubefake.NewClientBuilder().WithObjects(provisioner).Build()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	request, it := oneNodeRequest(provisioner)
	first := launcher.New(c, nil, cloud, 0)
	nodeClaims, done, err := first.CreateNodeClaims(t.Context(), request)
	if err != nil {
		t.Fatal(err)
	}
	return c, cloud, first, request, it, nodeClaims, done
}

// TestResumeLabelsANodeClaimACrashLeftUnlabelled: a controller killed between recording a
// NodeClaim's instance and writing its labels leaves it launched without its instance type and
// zone, so that its pods find no room there; the restarted controller's ResumeAll labels it from
// the instance, and launches nothing. (In the e2e TestControllerKilledMidBatchLaunchesExactly…
// such a NodeClaim had a sixth instance launched for its pod.)
func TestResumeLabelsANodeClaimACrashLeftUnlabelled(t *testing.T) {
	c, cloud, first, request, it, nodeClaims, done := createdForALaunch(t)
	instances, err := first.Launch(t.Context(), request, nodeClaims)
	if err != nil {
		t.Fatal(err)
	}
	pairs, _ := launcher.Assign(nodeClaims, instances)
	for nc, instance := range pairs {
		recorded, err := first.Record(t.Context(), nc, instance, it)
		if err != nil {
			t.Fatal(err)
		}
		// The crash: the labels Record wrote second were never written.
		unlabelled := recorded.DeepCopy()
		for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1.CapacityTypeLabelKey} {
			delete(unlabelled.Labels, key)
		}
		if err := c.Update(t.Context(), unlabelled); err != nil {
			t.Fatal(err)
		}
	}
	done()

	if err := launcher.New(c, nil, cloud, 0).ResumeAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, nc := range nodeClaims {
		got := &v1.NodeClaim{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(nc), got); err != nil {
			t.Fatal(err)
		}
		if got.Labels[corev1.LabelInstanceTypeStable] != it.Name || got.Labels[corev1.LabelTopologyZone] == "" || got.Labels[v1.CapacityTypeLabelKey] == "" {
			t.Errorf("nodeclaim %s labels %v, want its instance's type, zone and capacity type", got.Name, got.Labels)
		}
	}
	if launches := len(cloud.CreateCalls()); launches != 1 {
		t.Errorf("%d launches, want the first only", launches)
	}
}

// listCounter counts the cloud's listings of its instances.
type listCounter struct {
	*fake.InstanceProvider
	lists atomic.Int32
}

func (c *listCounter) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	c.lists.Add(1)
	return c.InstanceProvider.List(ctx)
}

// TestResumeAllListsTheInstancesOnce: a controller stopped with several launch groups' NodeClaims
// created and none launched; the restarted controller's ResumeAll launches each group once and
// lists the cloud's instances (a DescribeInstances of the whole cluster on AWS) once, not once
// per group.
func TestResumeAllListsTheInstancesOnce(t *testing.T) {
	provisioner := builders.Provisioner(builders.ProvisionerOptions{Name: "crash"})
	c := kubefake.NewClientBuilder().WithObjects(provisioner).Build()
	cloud := &listCounter{InstanceProvider: fake.NewInstanceProvider(fake.InstanceProviderOptions{})}
	request, _ := oneNodeRequest(provisioner)
	first := launcher.New(c, nil, cloud, 0)
	for range 3 {
		// The crash: the groups' NodeClaims were created, their launches never made.
		_, done, err := first.CreateNodeClaims(t.Context(), request)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	if err := launcher.New(c, nil, cloud, 0).ResumeAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if launches := len(cloud.CreateCalls()); launches != 3 {
		t.Errorf("%d launches, want one per group, 3", launches)
	}
	if lists := cloud.lists.Load(); lists != 1 {
		t.Errorf("the instances listed %d times, want once", lists)
	}
}

// TestResumeRecordsTheCapacityOfATypeOutOfCapacityNow: a controller killed between a launch and
// its record; by the restart the cloud has no capacity left in the offering the instance was
// launched in. ResumeAll records the instance with its type's capacity and allocatable, which
// the pool's limits and the plans of its pods count until the Node registers. (The code before
// looked the type up among the offerings available now, found none, and recorded no capacity:
// the node counted no resources.)
func TestResumeRecordsTheCapacityOfATypeOutOfCapacityNow(t *testing.T) {
	c, cloud, first, request, it, nodeClaims, done := createdForALaunch(t)
	if _, err := first.Launch(t.Context(), request, nodeClaims); err != nil {
		t.Fatal(err)
	}
	done()
	// The crash, then no capacity left where the instance runs.
	o := request.Candidates[0].Offering
	cloud.SetInsufficientCapacity(cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType})

	if err := launcher.New(c, nil, cloud, 0).ResumeAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(nodeClaims[0]), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ProviderID == "" || got.Status.Capacity.Cpu().Cmp(*it.Capacity.Cpu()) != 0 || got.Status.Allocatable.Memory().IsZero() {
		t.Errorf("nodeclaim %s: provider id %q, capacity %v, allocatable %v; want its instance's, with %s's capacity", got.Name, got.Status.ProviderID, got.Status.Capacity, got.Status.Allocatable, it.Name)
	}
	if launches := len(cloud.CreateCalls()); launches != 1 {
		t.Errorf("%d launches, want the first only", launches)
	}
}
