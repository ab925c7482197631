package nodeclass_test

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/controllers/nodeclass"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/kubefake"
	"karpenter.sh/karpenter/test/awsemulator"
)

// TestAMovedLatestIsResolvedWithinTheHour: AWS publishes a new release behind the parameter an
// `al2023@latest` alias reads; the class keeps the image it resolved while the parameter is
// cached (an hour), and its status.amis names the new one at its first resolution after — the
// change the disruption controller then drifts the nodes by (AMIDrift). In production a moved
// @latest is noticed within the cache's hour plus one resolution period.
func TestAMovedLatestIsResolvedWithinTheHour(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, sandboxSeed)
	class := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict([]byte(gettingStartedClass), class); err != nil {
		t.Fatal(err)
	}
	c := kubefake.NewClientBuilder().WithObjects(class).WithStatusSubresource(&awsv1.EC2NodeClass{}).Build()
	controller, err := nodeclass.New(nodeclass.Options{Client: c, Recorder: record.NewFakeRecorder(100), Clock: clk,
		Clients: awstest.Clients(t, server.URL, clk), ClusterName: clusterName, Region: awstest.Region, KubernetesVersion: "1.34"})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func() []string {
		t.Helper()
		if _, err := controller.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: class.Name}}); err != nil {
			t.Fatal(err)
		}
		resolved := &awsv1.EC2NodeClass{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(class), resolved); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ami := range resolved.Status.AMIs {
			ids = append(ids, ami.ID)
		}
		return slices.Sorted(slices.Values(ids))
	}
	const latest = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"
	const older = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20260415/image_id"
	was, _ := emulator.SSMParameter(latest)
	moved, ok := emulator.SSMParameter(older)
	if !ok || moved == was {
		t.Fatalf("parameters %s = %q and %s = %q, want two images", latest, was, older, moved)
	}
	before := resolve()
	if !slices.Contains(before, was) {
		t.Fatalf("status.amis %v, want %s, the image behind %s", before, was, latest)
	}
	emulator.SetSSMParameter(latest, moved)
	clk.Step(30 * time.Minute)
	if now := resolve(); !slices.Equal(now, before) {
		t.Errorf("within the hour status.amis %v, want the cached %v", now, before)
	}
	clk.Step(31 * time.Minute)
	if now := resolve(); !slices.Contains(now, moved) || slices.Contains(now, was) {
		t.Errorf("after the hour status.amis %v, want %s in place of %s", now, moved, was)
	}
}
