package awsemulator_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/test/awsemulator"
)

const launchSeed = vpcSeed + `
instanceProfiles: [KarpenterNodeInstanceProfile]
images: [ami-0123456789abcdef0]
`

func createTemplate(t *testing.T, client *ec2.Client, name string) string {
	t.Helper()
	out, err := client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            sdkaws.String("ami-0123456789abcdef0"),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("KarpenterNodeInstanceProfile")},
			SecurityGroupIds:   []string{"sg-nodes"},
			UserData:           sdkaws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\n/etc/eks/bootstrap.sh demo"))),
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: sdkaws.String("karpenter.sh/cluster"), Value: sdkaws.String("demo")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sdkaws.ToString(out.LaunchTemplate.LaunchTemplateId)
}

func TestLaunchTemplates(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()

	id := createTemplate(t, client, "karpenter-demo-1")
	_, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: sdkaws.String("karpenter-demo-1"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: sdkaws.String("ami-1")}})
	if code := errorCode(err); code != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("duplicate name: code %q (%v)", code, err)
	}
	// The same client token is the same request: it answers the template it created.
	for range 2 {
		out, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: sdkaws.String("karpenter-demo-2"), ClientToken: sdkaws.String("token-2"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: sdkaws.String("ami-2")}})
		if err != nil || sdkaws.ToString(out.LaunchTemplate.LaunchTemplateName) != "karpenter-demo-2" {
			t.Fatalf("CreateLaunchTemplate with a client token = %+v, %v", out, err)
		}
	}

	byName, err := client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"karpenter-demo-1"}})
	if err != nil || len(byName.LaunchTemplates) != 1 || sdkaws.ToString(byName.LaunchTemplates[0].LaunchTemplateId) != id ||
		len(byName.LaunchTemplates[0].Tags) != 1 || sdkaws.ToInt64(byName.LaunchTemplates[0].LatestVersionNumber) != 1 {
		t.Errorf("by name = %+v, %v", byName, err)
	}
	byTag, err := client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/cluster", "demo")}})
	if err != nil || len(byTag.LaunchTemplates) != 1 {
		t.Errorf("by tag = %+v, %v", byTag, err)
	}
	all, err := client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{filter("launch-template-name", "karpenter-demo-*")}})
	if err != nil || len(all.LaunchTemplates) != 2 {
		t.Errorf("by name pattern = %+v, %v", all, err)
	}
	_, err = client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"missing"}})
	if code := errorCode(err); code != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("missing name: code %q (%v)", code, err)
	}

	templates := e.LaunchTemplates()
	if len(templates) != 2 {
		t.Fatalf("admin templates = %+v", templates)
	}
	d := templates[0].Data
	userData, _ := base64.StdEncoding.DecodeString(d.UserData)
	if d.ImageID != "ami-0123456789abcdef0" || d.IAMInstanceProfileName != "KarpenterNodeInstanceProfile" || !slices.Equal(d.SecurityGroupIDs, []string{"sg-nodes"}) ||
		string(userData) != "#!/bin/bash\n/etc/eks/bootstrap.sh demo" {
		t.Errorf("stored data = %+v (user data %q)", d, userData)
	}

	if _, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: sdkaws.String("karpenter-demo-2")}); err != nil {
		t.Fatal(err)
	}
	_, err = client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: sdkaws.String("lt-0000000000000dead")})
	if code := errorCode(err); code != "InvalidLaunchTemplateId.NotFound" {
		t.Errorf("delete missing id: code %q (%v)", code, err)
	}
}

// fleetInput asks for count instances of capacityType from the types in subnets a and b.
func fleetInput(token, capacityType string, count int32, types ...string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range types {
		for _, s := range []string{"subnet-a", "subnet-b"} {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it), SubnetId: sdkaws.String(s)})
		}
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: sdkaws.String("nodes"), Version: sdkaws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: sdkaws.Int32(count), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType)},
		OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: sdkaws.String("karpenter.sh/provisioner-name"), Value: sdkaws.String("default")},
			{Key: sdkaws.String("kubernetes.io/cluster/demo"), Value: sdkaws.String("owned")},
		}}},
	}
	if token != "" {
		in.ClientToken = sdkaws.String(token)
	}
	return in
}

func launched(out *ec2.CreateFleetOutput) []string {
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, i.InstanceIds...)
	}
	return ids
}

func TestCreateFleetLaunchesTheCheapestPoolOnce(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")

	// On demand, lowest price: m5.large (0.096) beats m5.xlarge and c5.2xlarge in either subnet.
	in := fleetInput("token-1", "on-demand", 2, "c5.2xlarge", "m5.xlarge", "m5.large")
	first, err := client.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Errors) != 0 || len(first.Instances) != 1 || first.Instances[0].InstanceType != "m5.large" ||
		sdkaws.ToString(first.Instances[0].LaunchTemplateAndOverrides.Overrides.SubnetId) != "subnet-a" || first.Instances[0].Lifecycle != ec2types.InstanceLifecycleOnDemand || len(launched(first)) != 2 {
		t.Fatalf("CreateFleet = %+v", first)
	}
	// Retrying with the same token launches nothing more and answers the same fleet.
	again, err := client.CreateFleet(ctx, in)
	if err != nil || sdkaws.ToString(again.FleetId) != sdkaws.ToString(first.FleetId) || !slices.Equal(launched(again), launched(first)) {
		t.Errorf("retried CreateFleet = %+v, %v; want the first answer", again, err)
	}
	if n := len(e.EC2Instances()); n != 2 {
		t.Errorf("%d instances after a retried request, want 2", n)
	}
	// m5.large: 2 vCPUs, 8 GiB less the hypervisor's 7.5 %, 3 ENIs of 10 addresses → 3×9+2
	// pods; allocatable less 70m (6 % + 1 % of a core) and 255 + 11×29 + 100 MiB; at its
	// on-demand price.
	if i := e.EC2Instances()[0]; !maps.Equal(i.Capacity, map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29"}) ||
		!maps.Equal(i.Allocatable, map[string]string{"cpu": "1930m", "memory": "6903Mi", "pods": "29"}) || i.PricePerHour != 0.096 {
		t.Errorf("admin view of an m5.large: capacity %v, allocatable %v, $%g/h", i.Capacity, i.Allocatable, i.PricePerHour)
	}
	requests := e.FleetRequests()
	if len(requests) != 2 || !requests[1].Replayed || requests[0].ClientToken != "token-1" || requests[0].OnDemandAllocationStrategy != "lowest-price" ||
		requests[0].SpotAllocationStrategy != "price-capacity-optimized" || len(requests[0].LaunchTemplateConfigs[0].Overrides) != 6 ||
		requests[0].TagSpecifications["instance"]["karpenter.sh/provisioner-name"] != "default" {
		t.Errorf("recorded requests = %+v", requests)
	}

	_, err = client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0000000000000dead"}})
	if code := errorCode(err); code != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown instance: code %q (%v)", code, err)
	}
	_, err = client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0000000000000dead"}})
	if code := errorCode(err); code != "InvalidInstanceID.NotFound" {
		t.Errorf("describe unknown instance: code %q (%v)", code, err)
	}
}

// TestCreateFleetReplaysAClientTokensAnswerAfterItsInstancesTerminated: as EC2 documents, a
// client token names its request for at least a day after the instances terminated, so a request
// repeated with it is answered as the first was, the terminated instances named again, and
// launches nothing, even once DescribeInstances has forgotten them (issue 34, finding 1: a
// relaunch under the first launch's token gets the dead instance back).
func TestCreateFleetReplaysAClientTokensAnswerAfterItsInstancesTerminated(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, cfg := start(t, awsemulator.Options{Clock: clk, TerminatingDelay: 30 * time.Second}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")
	in := fleetInput("token-dead", "on-demand", 1, "m5.large")
	first, err := client.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ids := launched(first)
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		after time.Duration
		state string
	}{{time.Minute, "terminated"}, {23 * time.Hour, ""}} {
		clk.Step(step.after)
		again, err := client.CreateFleet(ctx, in)
		if err != nil || sdkaws.ToString(again.FleetId) != sdkaws.ToString(first.FleetId) || !slices.Equal(launched(again), ids) {
			t.Errorf("%s after the termination: CreateFleet = %+v, %v; want the first answer, %v", step.after, again, err, ids)
		}
		var states []string
		for _, i := range e.EC2Instances() {
			states = append(states, i.State)
		}
		if want := []string{step.state}; step.state == "" && len(states) != 0 || step.state != "" && !slices.Equal(states, want) {
			t.Errorf("%s after the termination: instances in states %v, want %v and none launched", step.after, states, want)
		}
	}
	requests := e.FleetRequests()
	if len(requests) != 3 || requests[0].Replayed || !requests[1].Replayed || !requests[2].Replayed {
		t.Errorf("recorded requests = %+v, want the first and two replays", requests)
	}
}

func TestEC2InstancesRunAndTerminate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_, cfg := start(t, awsemulator.Options{Clock: clk, PendingDelay: time.Minute, TerminatingDelay: 30 * time.Second}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")
	fleet, err := client.CreateFleet(ctx, fleetInput("", "on-demand", 2, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	ids := launched(fleet)
	describe := func(ids ...string) []ec2types.Instance {
		t.Helper()
		out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			t.Fatal(err)
		}
		var all []ec2types.Instance
		for _, r := range out.Reservations {
			all = append(all, r.Instances...)
		}
		return all
	}

	// Pending instances have their address already, as on EC2; running ones keep it.
	for _, i := range describe(ids...) {
		if i.State.Name != ec2types.InstanceStateNamePending || !strings.HasSuffix(sdkaws.ToString(i.PrivateDnsName), ".us-west-2.compute.internal") {
			t.Errorf("just launched: %s %s %q", sdkaws.ToString(i.InstanceId), i.State.Name, sdkaws.ToString(i.PrivateDnsName))
		}
	}
	clk.Step(time.Minute)
	dns := regexp.MustCompile(`^ip-10-0-1-\d+\.us-west-2\.compute\.internal$`)
	for _, i := range describe(ids...) {
		if i.State.Name != ec2types.InstanceStateNameRunning || !dns.MatchString(sdkaws.ToString(i.PrivateDnsName)) ||
			sdkaws.ToString(i.Placement.AvailabilityZone) != "us-west-2a" || i.InstanceType != "m5.large" || i.InstanceLifecycle != "" ||
			sdkaws.ToString(i.SubnetId) != "subnet-a" || sdkaws.ToString(i.ImageId) != "ami-0123456789abcdef0" || i.LaunchTime == nil || len(i.Tags) != 5 {
			t.Errorf("running instance = %+v", i)
		}
	}

	// Termination is idempotent and goes through shutting-down.
	for range 2 {
		out, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]})
		if err != nil || len(out.TerminatingInstances) != 1 || out.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameShuttingDown {
			t.Fatalf("TerminateInstances = %+v, %v", out, err)
		}
	}
	clk.Step(30 * time.Second)
	out, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]})
	if err != nil || out.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameTerminated || out.TerminatingInstances[0].PreviousState.Name != ec2types.InstanceStateNameTerminated {
		t.Errorf("terminating a terminated instance = %+v, %v", out, err)
	}
	running, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		filter("instance-state-name", "pending", "running"), filter("tag:karpenter.sh/provisioner-name", "*"),
	}})
	if err != nil || len(running.Reservations) != 1 || len(running.Reservations[0].Instances) != 1 || sdkaws.ToString(running.Reservations[0].Instances[0].InstanceId) != ids[1] {
		t.Errorf("running instances by tag = %+v, %v", running, err)
	}
	// Terminated instances stay visible for a while, then EC2 forgets them.
	clk.Step(time.Hour)
	if got := len(describe()); got != 1 {
		t.Errorf("an hour after termination: %d instances, want 1", got)
	}
}

// Every TerminateInstances call is recorded, the repeated ones too: tests count how often an
// instance was terminated.
func TestTerminateInstancesCallsAreRecorded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, cfg := start(t, awsemulator.Options{Clock: clk}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")
	fleet, err := client.CreateFleet(ctx, fleetInput("", "on-demand", 2, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	ids := launched(fleet)
	for range 2 {
		clk.Step(time.Second)
		if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
			t.Fatal(err)
		}
	}
	var terminations struct {
		Terminations []awsemulator.TerminationRequest `json:"terminations"`
	}
	getJSON(t, sdkaws.ToString(cfg.BaseEndpoint)+"/_emulator/ec2/terminations", &terminations)
	calls := terminations.Terminations
	if len(calls) != 2 || !slices.Equal(calls[1].InstanceIDs, ids[:1]) || !calls[1].Received.After(calls[0].Received) {
		t.Errorf("recorded terminations = %+v, want 2 of %s", calls, ids[0])
	}
	if direct := e.TerminationRequests(); len(direct) != 2 || !slices.Equal(direct[0].InstanceIDs, ids[:1]) {
		t.Errorf("TerminationRequests = %+v", direct)
	}
}

func TestCreateFleetReportsCapacityErrorsPerOverride(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")

	// Spot in us-west-2a is out of m5.large; the cheapest remaining pool is m5.large in 2b.
	if _, err := e.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, InstanceType: "m5.large", AvailabilityZone: "us-west-2a", CapacityType: "spot"}); err != nil {
		t.Fatal(err)
	}
	out, err := client.CreateFleet(ctx, fleetInput("", "spot", 1, "m5.large", "m5.xlarge"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || sdkaws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" || out.Errors[0].Lifecycle != ec2types.InstanceLifecycleSpot ||
		out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType != "m5.large" || sdkaws.ToString(out.Errors[0].LaunchTemplateAndOverrides.Overrides.SubnetId) != "subnet-a" ||
		sdkaws.ToString(out.Errors[0].LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateName) != "nodes" {
		t.Errorf("errors = %+v", out.Errors)
	}
	if len(out.Instances) != 1 || out.Instances[0].Lifecycle != ec2types.InstanceLifecycleSpot || out.Instances[0].InstanceType != "m5.large" ||
		sdkaws.ToString(out.Instances[0].LaunchTemplateAndOverrides.Overrides.SubnetId) != "subnet-b" {
		t.Errorf("instances = %+v", out.Instances)
	}
	spot, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: launched(out)})
	if err != nil || spot.Reservations[0].Instances[0].InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		t.Errorf("spot instance = %+v, %v", spot, err)
	}

	// Every pool failing launches nothing and names each failure.
	e.ClearFaults()
	for _, code := range []string{"MaxSpotInstanceCountExceeded", "VcpuLimitExceeded", "UnfulfillableCapacity"} {
		if _, err := e.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, Code: code, Times: 1}); err != nil {
			t.Fatal(err)
		}
	}
	none, err := client.CreateFleet(ctx, fleetInput("", "on-demand", 1, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, f := range none.Errors {
		codes = append(codes, sdkaws.ToString(f.ErrorCode))
	}
	if len(none.Instances) != 0 || !slices.Equal(codes, []string{"MaxSpotInstanceCountExceeded", "VcpuLimitExceeded"}) {
		t.Errorf("all pools failing: instances %+v, errors %v", none.Instances, codes)
	}

	// A pool the region does not offer, and an exhausted subnet, are per-override errors too.
	e.ClearFaults()
	unsupported, err := client.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: sdkaws.String("nodes"), Version: sdkaws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: "m5.large", SubnetId: sdkaws.String("subnet-other")},
				{InstanceType: "m5.large", SubnetId: sdkaws.String("subnet-missing")},
			},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: sdkaws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
	})
	codes = nil
	for _, f := range unsupported.Errors {
		codes = append(codes, sdkaws.ToString(f.ErrorCode))
	}
	if err != nil || !slices.Equal(codes, []string{"InsufficientFreeAddressesInSubnet", "InvalidSubnetID.NotFound"}) {
		t.Errorf("unusable pools: %v, %v", codes, err)
	}

	_, err = client.CreateFleet(ctx, &ec2.CreateFleetInput{Type: ec2types.FleetTypeMaintain, LaunchTemplateConfigs: fleetInput("", "spot", 1, "m5.large").LaunchTemplateConfigs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: sdkaws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot}})
	if code := errorCode(err); code != "InvalidParameterValue" {
		t.Errorf("maintain fleet: code %q (%v)", code, err)
	}
}

// TestCreateFleetRefusesAnAMIThatDoesNotExist: a launch template's AMI must be one the public
// EKS-optimized AMI parameters name or one of the account's own; any other fails each pool as EC2
// does, malformed or not found.
func TestCreateFleetRefusesAnAMIThatDoesNotExist(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	for image, want := range map[string]string{"ami-00000000000000dea": "InvalidAMIID.NotFound", "ami-1": "InvalidAMIID.Malformed"} {
		name := "nodes-" + image
		if _, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: sdkaws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: sdkaws.String(image), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("KarpenterNodeInstanceProfile")},
		}}); err != nil {
			t.Fatal(err)
		}
		in := fleetInput("", "on-demand", 1, "m5.large")
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = sdkaws.String(name)
		out, err := client.CreateFleet(ctx, in)
		if err != nil || len(out.Instances) != 0 || len(out.Errors) == 0 || sdkaws.ToString(out.Errors[0].ErrorCode) != want ||
			!strings.Contains(sdkaws.ToString(out.Errors[0].ErrorMessage), image) {
			t.Errorf("launching from %s = %+v, %v; want %s naming it", image, out, err, want)
		}
	}
}

func TestCreateFleetPrioritizedAndAdmin(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, launchSeed)
	url := sdkaws.ToString(cfg.BaseEndpoint)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")

	in := fleetInput("", "on-demand", 1, "m5.large", "r5.2xlarge")
	in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
	for i := range in.LaunchTemplateConfigs[0].Overrides {
		o := &in.LaunchTemplateConfigs[0].Overrides[i]
		if o.InstanceType == "r5.2xlarge" && sdkaws.ToString(o.SubnetId) == "subnet-b" {
			o.Priority = sdkaws.Float64(0)
		} else {
			o.Priority = sdkaws.Float64(float64(i + 1))
		}
	}
	out, err := client.CreateFleet(ctx, in)
	if err != nil || len(out.Instances) != 1 || out.Instances[0].InstanceType != "r5.2xlarge" || sdkaws.ToString(out.Instances[0].LaunchTemplateAndOverrides.Overrides.SubnetId) != "subnet-b" {
		t.Fatalf("prioritized fleet = %+v, %v", out, err)
	}

	var listed struct {
		Instances []awsemulator.EC2Instance `json:"instances"`
	}
	getJSON(t, url+"/_emulator/ec2/instances", &listed)
	if len(listed.Instances) != 1 || listed.Instances[0].Tags["karpenter.sh/provisioner-name"] != "default" || listed.Instances[0].CapacityType != "on-demand" {
		t.Errorf("admin instances = %+v", listed)
	}
	var fleets struct {
		Fleets []awsemulator.FleetRequest `json:"fleets"`
	}
	getJSON(t, url+"/_emulator/ec2/fleets", &fleets)
	if len(fleets.Fleets) != 1 || fleets.Fleets[0].OnDemandAllocationStrategy != "prioritized" || *fleets.Fleets[0].LaunchTemplateConfigs[0].Overrides[3].Priority != 0 {
		t.Errorf("admin fleets = %+v", fleets)
	}
	// Capacity faults come through the admin API as any fault does.
	resp, err := http.Post(url+"/_emulator/faults", "application/json", strings.NewReader(
		`{"kind": "capacity", "instanceType": "r5.2xlarge", "capacityType": "on-demand", "code": "VcpuLimitExceeded", "times": 1}`))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("capacity fault: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	in.ClientToken = sdkaws.String("another launch") // the SDK filled in the first call's token
	limited, err := client.CreateFleet(ctx, in)
	if err != nil || len(limited.Errors) != 1 || sdkaws.ToString(limited.Errors[0].ErrorCode) != "VcpuLimitExceeded" || len(limited.Instances) != 1 ||
		limited.Instances[0].InstanceType != "m5.large" || sdkaws.ToString(limited.Instances[0].LaunchTemplateAndOverrides.Overrides.SubnetId) != "subnet-a" {
		t.Errorf("prioritized fleet with r5.2xlarge over its vCPU limit = %+v, %v", limited, err)
	}
	resp, err = http.Post(url+"/_emulator/faults", "application/json", strings.NewReader(`{"kind": "capacity", "code": "NoSuchError"}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown capacity code: %v %v, want 400", resp, err)
	}
	_ = resp.Body.Close()

	resp, err = http.Post(url+"/_emulator/ec2/instances/terminate", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("drain: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	getJSON(t, url+"/_emulator/ec2/instances", &listed)
	if listed.Instances[0].State != "terminated" || listed.Instances[1].State != "terminated" {
		t.Errorf("after drain: %+v", listed.Instances)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's local server
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestDescribeInstancesPaginatesAndCreateTags(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")
	fleet, err := client.CreateFleet(ctx, fleetInput("", "spot", 12, "m5.large"))
	if err != nil || len(launched(fleet)) != 12 {
		t.Fatalf("CreateFleet = %+v, %v", fleet, err)
	}

	var ids []string
	pages := 0
	for p := ec2.NewDescribeInstancesPaginator(client, &ec2.DescribeInstancesInput{MaxResults: sdkaws.Int32(5)}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				ids = append(ids, sdkaws.ToString(i.InstanceId))
			}
		}
	}
	if pages != 3 || !slices.Equal(ids, launched(fleet)) {
		t.Errorf("got %v over %d pages, want the 12 launched over 3", ids, pages)
	}
	_, err = client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids[:1], MaxResults: sdkaws.Int32(5)})
	if code := errorCode(err); code != "InvalidParameterCombination" {
		t.Errorf("ids with MaxResults: code %q (%v)", code, err)
	}

	if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids[:2], Tags: []ec2types.Tag{{Key: sdkaws.String("Name"), Value: sdkaws.String("node")}}}); err != nil {
		t.Fatal(err)
	}
	named, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tag:Name", "node"), filter("instance-lifecycle", "spot")}})
	if err != nil || len(named.Reservations) != 1 || len(named.Reservations[0].Instances) != 2 {
		t.Errorf("tagged instances = %+v, %v", named, err)
	}
	_, err = client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-0000000000000dead"}, Tags: []ec2types.Tag{{Key: sdkaws.String("k"), Value: sdkaws.String("v")}}})
	if code := errorCode(err); code != "InvalidInstanceID.NotFound" {
		t.Errorf("tagging an unknown instance: code %q (%v)", code, err)
	}

	// A deleted launch template is a per-override error, which tells a client to recreate it.
	if _, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: sdkaws.String("nodes")}); err != nil {
		t.Fatal(err)
	}
	gone, err := client.CreateFleet(ctx, fleetInput("", "on-demand", 1, "m5.large"))
	if err != nil || len(gone.Instances) != 0 || len(gone.Errors) != 2 || sdkaws.ToString(gone.Errors[0].ErrorCode) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("fleet of a deleted template = %+v, %v", gone, err)
	}
}

// TestCreateFleetRefusesATokenUsedAgainWithOtherParameters: as EC2, a client token repeated with
// the same parameters answers the first request again; with others (fewer instances, other
// pools), it is refused with IdempotentParameterMismatch and nothing is launched.
func TestCreateFleetRefusesATokenUsedAgainWithOtherParameters(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, launchSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	createTemplate(t, client, "nodes")
	if _, err := client.CreateFleet(ctx, fleetInput("token-1", "on-demand", 2, "m5.large")); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]*ec2.CreateFleetInput{
		"fewer instances": fleetInput("token-1", "on-demand", 1, "m5.large"),
		"other pools":     fleetInput("token-1", "on-demand", 2, "m5.large", "m5.xlarge"),
		"spot":            fleetInput("token-1", "spot", 2, "m5.large"),
	} {
		_, err := client.CreateFleet(ctx, in)
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "IdempotentParameterMismatch" {
			t.Errorf("%s under the first request's token: %v, want IdempotentParameterMismatch", name, err)
		}
	}
	if n := len(e.EC2Instances()); n != 2 {
		t.Errorf("%d instances, want the first request's 2", n)
	}
}
