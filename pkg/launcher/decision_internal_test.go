package launcher

import (
	"errors"
	"testing"

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
	l := New(kubefake.NewClientBuilder().Build(), cloud, 0)
	const decision = "replacing old"
	request := Request{Pool: Pool{Provisioner: builders.Provisioner(builders.ProvisionerOptions{Name: "default"})},
		Candidates:  []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}},
		Nodes:       []*scheduling.NewNode{{Pool: pools.Provisioner("default"), InstanceTypes: []*cloudprovider.InstanceType{it}}},
		Annotations: map[string]string{DecisionAnnotationKey: decisionDigest(decision)}}
	// The crash: the NodeClaim created, the process gone before the launch was recorded.
	_, done, err := l.CreateNodeClaims(t.Context(), request)
	done()
	if err != nil {
		t.Fatal(err)
	}
	request.Annotations = nil
	_, err = l.LaunchNode(t.Context(), request, decision, nil)
	if inProgress := (*LaunchInProgressError)(nil); !errors.As(err, &inProgress) {
		t.Errorf("LaunchNode: %v, want a LaunchInProgressError", err)
	}
	if calls := len(cloud.CreateCalls()); calls != 0 {
		t.Errorf("%d launches, want none: the decision's launch is under way", calls)
	}
}
