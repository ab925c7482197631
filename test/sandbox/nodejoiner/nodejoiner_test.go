package nodejoiner

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/test/awsemulator"
)

type instances []awsemulator.Instance

func (i instances) Instances(string) []awsemulator.Instance { return i }
func (instances) EC2Instances() []awsemulator.EC2Instance   { return nil }

// fleetInstances are EC2 instances a Provisioner launched, and no Auto Scaling group.
type fleetInstances []awsemulator.EC2Instance

func (fleetInstances) Instances(string) []awsemulator.Instance   { return nil }
func (f fleetInstances) EC2Instances() []awsemulator.EC2Instance { return f }

func instance(id, state string) awsemulator.Instance {
	return awsemulator.Instance{
		InstanceID: id, ProviderID: "aws:///us-west-2b/" + id, AutoScalingGroupName: "workers",
		InstanceType: "m5.large", AvailabilityZone: "us-west-2b", LifecycleState: state,
		Labels:   map[string]string{"karpenter.sh/node-group": "workers"},
		Taints:   []awsemulator.Taint{{Key: "dedicated", Value: "queue", Effect: "NoSchedule"}},
		Capacity: map[string]string{"cpu": "2", "memory": "8Gi", "pods": "29"},
	}
}

func TestNodeLooksLikeTheInstancesKubelet(t *testing.T) {
	node, err := Node(instance("i-1", "InService"))
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != "i-1" || node.Spec.ProviderID != "aws:///us-west-2b/i-1" {
		t.Errorf("name %q providerID %q", node.Name, node.Spec.ProviderID)
	}
	for key, want := range map[string]string{
		"karpenter.sh/node-group":      "workers",
		corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone:       "us-west-2b",
		corev1.LabelTopologyRegion:     "us-west-2",
		GroupLabel:                     "workers",
		JoinedLabel:                    "true",
		corev1.LabelHostname:           "i-1",
	} {
		if got := node.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
	if node.Annotations[environment.KwokNodeAnnotation] == "" {
		t.Errorf("no kwok annotation: %v", node.Annotations)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints = %v", node.Spec.Taints)
	}
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("allocatable cpu = %s", cpu.String())
	}
	bad := instance("i-2", "InService")
	bad.Capacity["cpu"] = "two"
	if _, err := Node(bad); err == nil {
		t.Error("expected an error for an unparsable capacity")
	}
}

func TestSyncRegistersInServiceAndRemovesGoneInstances(t *testing.T) {
	ctx := context.Background()
	stale, err := Node(instance("i-gone", "InService"))
	if err != nil {
		t.Fatal(err)
	}
	foreign := builders.Node(builders.NodeOptions{Name: "not-joined"})
	orphan := builders.Pod(builders.PodOptions{Name: "p", NodeName: "i-gone"})
	c := fake.NewClientBuilder().WithObjects(stale, foreign, orphan).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	joiner := &Joiner{Client: c, Instances: instances{
		instance("i-up", "InService"), instance("i-pending", "Pending"), instance("i-leaving", "Terminating"),
	}}
	if err := joiner.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if len(names) != 2 || names[0] != "i-up" || names[1] != "not-joined" {
		t.Errorf("nodes = %v, want [i-up not-joined]", names)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("pods of the removed node remain: %v", pods.Items)
	}
}

func TestSyncBootsTheNodesKarpenterCreatedOnceTheirInstanceBooted(t *testing.T) {
	ctx := context.Background()
	launched := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ec2Instance := func(id, state string, launchedAgo time.Duration) awsemulator.EC2Instance {
		return awsemulator.EC2Instance{
			InstanceID: id, ProviderID: "aws:///us-west-2a/" + id, InstanceType: "m5.large", State: state,
			LaunchTime: launched.Add(-launchedAgo), Capacity: map[string]string{"cpu": "2", "memory": "8192Mi", "pods": "29"},
		}
	}
	karpenterNode := func(name, providerID string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}},
			Spec:       corev1.NodeSpec{ProviderID: providerID},
		}
	}
	c := fake.NewClientBuilder().WithStatusSubresource(&corev1.Node{}).WithObjects(
		karpenterNode("booted", "aws:///us-west-2a/i-booted"),
		karpenterNode("booting", "aws:///us-west-2a/i-booting"),
		karpenterNode("pending", "aws:///us-west-2a/i-pending"),
		karpenterNode("no-instance", "aws:///us-west-2a/i-unknown"),
	).Build()
	joiner := &Joiner{Client: c, BootDelay: 5 * time.Second, Clock: clocktesting.NewFakePassiveClock(launched), Instances: fleetInstances{
		ec2Instance("i-booted", "running", 5*time.Second),
		ec2Instance("i-booting", "running", 4*time.Second),
		ec2Instance("i-pending", "pending", time.Minute),
		ec2Instance("i-orphan", "running", time.Minute),
	}}
	if err := joiner.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 4 {
		t.Errorf("%d nodes, want the 4 Karpenter created: the joiner registers none for an orphan instance", len(nodes.Items))
	}
	for _, node := range nodes.Items {
		handed := node.Annotations[environment.KwokNodeAnnotation] == environment.KwokNodeAnnotationValue
		if handed != (node.Name == "booted") {
			t.Errorf("node %s handed to kwok: %t", node.Name, handed)
		}
		if node.Name != "booted" {
			continue
		}
		if pods, cpu := node.Status.Allocatable[corev1.ResourcePods], node.Status.Capacity[corev1.ResourceCPU]; pods.Value() != 29 || cpu.Value() != 2 ||
			node.Status.NodeInfo.Architecture != "amd64" {
			t.Errorf("booted node's status = %+v", node.Status)
		}
	}
}
