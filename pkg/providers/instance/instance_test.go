package instance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/instance"
	"karpenter.sh/karpenter/pkg/providers/instancetype"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/securitygroup"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/providers/subnet"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const seed = `
subnets:
- {id: subnet-a, availabilityZone: us-west-2a}
- {id: subnet-b, availabilityZone: us-west-2b}
securityGroups:
- {id: sg-nodes, name: demo-nodes}
instanceProfiles: [KarpenterNodeInstanceProfile-demo]
eksClusters:
- {name: demo, serviceIpv4Cidr: 10.100.0.0/16}
`

func m5Large(zone string) cloudprovider.Candidate {
	return cloudprovider.Candidate{
		InstanceType: &cloudprovider.InstanceType{
			Name:     "m5.large",
			Labels:   map[string]string{corev1.LabelArchStable: "amd64"},
			Capacity: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(29, resource.DecimalSI)},
		},
		Offering: cloudprovider.Offering{Zone: zone, CapacityType: v1alpha5.CapacityTypeOnDemand, Price: 0.096, Available: true},
	}
}

// The instances of a node class launch into its subnets from Karpenter's template, tagged as
// the cluster's, and are read, listed and terminated by provider id.
func TestInstancesOfANodeClass(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, seed)
	clients := awstest.Clients(t, server.URL, clk)
	unavailable := instancetype.NewUnavailableOfferings(clk, 3*time.Minute)
	templates := launchtemplate.NewProvider(clients, launchtemplate.Options{ClusterName: "demo"},
		amifamily.NewProvider(clients, "1.34", clk), securitygroup.NewProvider(clients, clk), clk)
	instances := instance.NewProvider(clients, "demo", clk, unavailable, templates)
	ctx := context.Background()

	nodeClass := instance.NodeClass{
		Subnets:         []subnet.Subnet{{ID: "subnet-a", Zone: "us-west-2a", AvailableIPv4s: 100}, {ID: "subnet-b", Zone: "us-west-2b", AvailableIPv4s: 100}},
		SecurityGroups:  []selector.Term{{ID: "sg-nodes"}},
		InstanceProfile: "KarpenterNodeInstanceProfile-demo",
		Tags:            map[string]string{"team": "ml"},
	}
	launched, err := instances.Create(ctx, cloudprovider.LaunchRequest{
		Count:           2,
		Candidates:      []cloudprovider.Candidate{m5Large("us-west-2b"), m5Large("us-west-2a")},
		ProvisionerName: "default",
		IdempotencyKey:  "launch-1",
	}, nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	if len(launched) != 2 || len(emulator.FleetRequests()) != 1 {
		t.Fatalf("launched %d instances in %d CreateFleet calls, want 2 in one", len(launched), len(emulator.FleetRequests()))
	}
	for _, i := range launched {
		if i.Zone != "us-west-2b" || i.LaunchGroup != "launch-1" || i.Labels[v1alpha5.ProvisionerNameLabelKey] != "default" || i.NodeName == "" {
			t.Errorf("launched %+v, want one in the first candidate's zone, of launch-1, for provisioner default, with its node name", i)
		}
	}
	for _, i := range emulator.EC2Instances() {
		if i.SubnetID != "subnet-b" || i.Tags["kubernetes.io/cluster/demo"] != "owned" || i.Tags["team"] != "ml" {
			t.Errorf("EC2 instance %s in %s tagged %v, want subnet-b, the cluster's and the node class's tags", i.InstanceID, i.SubnetID, i.Tags)
		}
	}
	listed, err := instances.List(ctx)
	if err != nil || len(listed) != 2 {
		t.Fatalf("List = %d instances, %v; want the 2 launched", len(listed), err)
	}
	if got, err := instances.Get(ctx, launched[0].ProviderID); err != nil || got.ID != launched[0].ID {
		t.Errorf("Get = %+v, %v; want %s", got, err, launched[0].ID)
	}
	if err := instances.Delete(ctx, launched[0].ProviderID); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	var notFound *cloudprovider.NotFoundError
	if _, err := instances.Get(ctx, launched[0].ProviderID); !errors.As(err, &notFound) {
		t.Errorf("Get after Delete = %v, want not found", err)
	}
	if err := instances.Delete(ctx, launched[0].ProviderID); err != nil {
		t.Errorf("Delete again = %v, want none: deleting is idempotent", err)
	}
}
