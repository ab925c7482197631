package aws_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
)

// launchSeed is the cluster's VPC and the node instance profile launches may name.
const launchSeed = vpcSeed + `
instanceProfiles: [KarpenterNodeInstanceProfile-demo, custom]
images: [ami-0123456789abcdef0]
`

// candidates lists the offerings of the named types, in the order given, as the scheduler
// would pass them: "m5.large/us-west-2a/spot".
func (e *instancesEnv) candidates(t *testing.T, names ...string) []cloudprovider.Candidate {
	t.Helper()
	types := e.instanceTypes(t, "")
	var out []cloudprovider.Candidate
	for _, name := range names {
		parts := strings.Split(name, "/")
		it, ok := types[parts[0]]
		if !ok {
			t.Fatalf("%s is not offered", parts[0])
		}
		i := slices.IndexFunc(it.Offerings, func(o cloudprovider.Offering) bool { return o.Zone == parts[1] && o.CapacityType == parts[2] })
		if i < 0 {
			t.Fatalf("%s has no offering %s", parts[0], name)
		}
		out = append(out, cloudprovider.Candidate{InstanceType: it, Offering: it.Offerings[i]})
	}
	return out
}

func (e *instancesEnv) create(t *testing.T, request cloudprovider.LaunchRequest) *cloudprovider.Instance {
	t.Helper()
	launched, err := e.instances.Create(context.Background(), request)
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	return launched[0]
}

func request(candidates []cloudprovider.Candidate) cloudprovider.LaunchRequest {
	return cloudprovider.LaunchRequest{
		Candidates:      candidates,
		ProvisionerName: "default",
		Labels:          map[string]string{"team": "ml"},
		Taints:          []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}},
		Provider:        provider(`{"tags":{"cost-center":"42"}}`),
	}
}

func TestCreateSendsOneInstantFleet(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	instance := e.create(t, request(e.candidates(t, "m5.large/us-west-2a/spot", "m5.large/us-west-2b/spot", "m5.xlarge/us-west-2a/spot", "m5.large/us-west-2a/on-demand")))

	if !strings.HasPrefix(instance.ID, "i-") || instance.ProviderID != "aws:///"+instance.Zone+"/"+instance.ID || instance.NodeName == "" ||
		instance.CapacityType != v1alpha5.CapacityTypeSpot || (instance.InstanceType != "m5.large" && instance.InstanceType != "m5.xlarge") {
		t.Errorf("instance = %+v", instance)
	}
	for key, want := range map[string]string{
		v1alpha5.ProvisionerNameLabelKey: "default", "team": "ml", v1alpha5.CapacityTypeLabelKey: "spot",
		corev1.LabelTopologyZone: instance.Zone, corev1.LabelInstanceTypeStable: instance.InstanceType, corev1.LabelArchStable: "amd64",
	} {
		if instance.Labels[key] != want {
			t.Errorf("label %s = %q, want %q", key, instance.Labels[key], want)
		}
	}

	requests := e.emulator.FleetRequests()
	if len(requests) != 1 {
		t.Fatalf("%d fleet requests, want 1", len(requests))
	}
	fleet := requests[0]
	if fleet.Type != "instant" || fleet.TotalTargetCapacity != 1 || fleet.DefaultTargetCapacityType != "spot" ||
		fleet.SpotAllocationStrategy != "price-capacity-optimized" || fleet.OnDemandAllocationStrategy != "prioritized" {
		t.Errorf("fleet request = %+v", fleet)
	}
	// Spot candidates only, one subnet per zone: in us-west-2a the one with the most addresses.
	var overrides []string
	for _, c := range fleet.LaunchTemplateConfigs {
		for _, o := range c.Overrides {
			overrides = append(overrides, o.InstanceType+"@"+o.SubnetID)
		}
	}
	if diff := cmp.Diff([]string{"m5.large@subnet-a", "m5.large@subnet-b", "m5.xlarge@subnet-a"}, overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
	wantTags := map[string]string{
		"Name": "karpenter.sh/demo/default", "karpenter.sh/provisioner-name": "default",
		"kubernetes.io/cluster/demo": "owned", "cost-center": "42",
	}
	if diff := cmp.Diff(wantTags, fleet.TagSpecifications["instance"]); diff != "" {
		t.Errorf("instance tags (-want +got):\n%s", diff)
	}

	checkLaunchTemplate(t, e, instance)
}

// checkLaunchTemplate checks the launch template the instance launched from: Karpenter's AMI,
// security groups, instance profile and the user data that joins the node (parsed in full by
// TestUserDataJoinsTheNodeWithNodeadm).
func checkLaunchTemplate(t *testing.T, e *instancesEnv, instance *cloudprovider.Instance) {
	t.Helper()
	lt := templateOf(t, e, instance.InstanceType)
	data := lt.Data
	config := parseUserData(t, data.UserData)
	if config.Spec.Cluster.Name != "demo" || !slices.Contains(config.Spec.Kubelet.Flags, "--node-labels=karpenter.sh/provisioner-name=default,team=ml") {
		t.Errorf("user data = %+v", config)
	}
	if !slices.Equal(data.SecurityGroupIDs, []string{"sg-nodes"}) || data.IAMInstanceProfileName != "KarpenterNodeInstanceProfile-demo" || !strings.HasPrefix(data.ImageID, "ami-") {
		t.Errorf("launch template data = %+v", data)
	}
	launched := e.emulator.EC2Instances()
	if len(launched) != 1 || launched[0].ImageID != data.ImageID || launched[0].LaunchTemplateName != lt.LaunchTemplateName || launched[0].PrivateDNSName != instance.NodeName {
		t.Errorf("launched %+v, want the template %s, its AMI and the node name %s", launched, lt.LaunchTemplateName, instance.NodeName)
	}
	// The network it runs in, which subnet and security group drift compare with the class's.
	if instance.SubnetID == "" || instance.SubnetID != launched[0].SubnetID || !slices.Equal(instance.SecurityGroupIDs, data.SecurityGroupIDs) {
		t.Errorf("instance in subnet %q with groups %v, want %q and the template's %v", instance.SubnetID, instance.SecurityGroupIDs, launched[0].SubnetID, data.SecurityGroupIDs)
	}
	for _, config := range e.emulator.FleetRequests()[0].LaunchTemplateConfigs {
		if config.Version != "$Latest" {
			t.Errorf("Karpenter's template %s launches at version %s, want $Latest", config.LaunchTemplateName, config.Version)
		}
	}
}

func TestLaunchTemplatesAreReusedPerDistinctInputs(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	amd := e.candidates(t, "m5.large/us-west-2a/on-demand")
	e.create(t, request(amd))
	e.create(t, request(amd))
	if n := len(e.emulator.LaunchTemplates()); n != 1 {
		t.Errorf("two launches of the same inputs made %d templates, want 1", n)
	}
	// A new process finds the template by name instead of making another.
	other := newInstancesEnvOn(t, e)
	if _, err := other.Create(context.Background(), request(amd)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.emulator.LaunchTemplates()); n != 1 {
		t.Errorf("a restarted provider made %d templates, want 1", n)
	}
	relabelled := request(amd)
	relabelled.Labels = map[string]string{"team": "web"}
	e.create(t, relabelled)
	arm := request(e.candidates(t, "m6g.large/us-west-2a/on-demand"))
	e.create(t, arm)
	templates := e.emulator.LaunchTemplates()
	if len(templates) != 3 {
		t.Fatalf("%d templates, want one per user data and one per AMI: 3", len(templates))
	}
	amis := map[string]bool{}
	for _, lt := range templates {
		amis[lt.Data.ImageID] = true
	}
	if len(amis) != 2 {
		t.Errorf("templates use AMIs %v, want the amd64 and the arm64 one", amis)
	}
}

// newInstancesEnvOn builds a second Instances, as a restarted controller would, on e's emulator.
func newInstancesEnvOn(t *testing.T, e *instancesEnv) *aws.Instances {
	t.Helper()
	other := newInstances(t, e.server.URL, e.clock, 0)
	if err := other.RefreshInstanceTypes(context.Background()); err != nil {
		t.Fatal(err)
	}
	other.RefreshPrices(context.Background())
	return other
}

func TestUsersLaunchTemplateIsUsedAsGiven(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	if _, err := e.ec2.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String("my-template"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: sdkaws.String("ami-0123456789abcdef0"), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("custom")}},
	}); err != nil {
		t.Fatal(err)
	}
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand"))
	r.Provider = provider(`{"launchTemplate":"my-template"}`)
	e.create(t, r)
	fleet := e.emulator.FleetRequests()[0]
	if len(fleet.LaunchTemplateConfigs) != 1 || fleet.LaunchTemplateConfigs[0].LaunchTemplateName != "my-template" || fleet.LaunchTemplateConfigs[0].Version != "$Default" {
		t.Errorf("fleet configs = %+v, want my-template at its default version", fleet.LaunchTemplateConfigs)
	}
	if n := len(e.emulator.LaunchTemplates()); n != 1 {
		t.Errorf("%d templates, want only the user's", n)
	}
}

func TestCapacityErrorsFallThroughToOtherZonesThenOnDemand(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	candidates := e.candidates(t, "m5.large/us-west-2a/spot", "m5.large/us-west-2b/spot", "m5.large/us-west-2a/on-demand")

	if _, err := e.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, InstanceType: "m5.large", AvailabilityZone: "us-west-2a", CapacityType: "spot"}); err != nil {
		t.Fatal(err)
	}
	instance := e.create(t, request(candidates))
	if instance.Zone != "us-west-2b" || instance.CapacityType != v1alpha5.CapacityTypeSpot {
		t.Errorf("with no spot capacity in us-west-2a launched %s %s, want spot in us-west-2b", instance.CapacityType, instance.Zone)
	}
	iceKey := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}
	if instance.FellBackFrom == nil || instance.FellBackFrom.Reasons[iceKey] != "InsufficientInstanceCapacity" {
		t.Errorf("the launch fell back from %+v, want the spot offering in us-west-2a with EC2's reason", instance.FellBackFrom)
	}
	offering := func(zone, capacityType string) cloudprovider.Offering {
		for _, o := range e.instanceTypes(t, "")["m5.large"].Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o
			}
		}
		t.Fatalf("no offering %s %s", zone, capacityType)
		return cloudprovider.Offering{}
	}
	if offering("us-west-2a", "spot").Available || !offering("us-west-2b", "spot").Available {
		t.Error("the refused offering is still offered, or another is not")
	}

	if _, err := e.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, CapacityType: "spot", Code: "MaxSpotInstanceCountExceeded"}); err != nil {
		t.Fatal(err)
	}
	instance = e.create(t, request(candidates))
	if instance.CapacityType != v1alpha5.CapacityTypeOnDemand {
		t.Errorf("with no spot capacity anywhere launched %s, want on-demand", instance.CapacityType)
	}

	if _, err := e.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, CapacityType: "on-demand", Code: "VcpuLimitExceeded"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.instances.Create(context.Background(), request(candidates))
	var capacityErr *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &capacityErr) {
		t.Fatalf("Create with no capacity = %v, want InsufficientCapacityError", err)
	}
	want := map[cloudprovider.OfferingKey]string{
		{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}:      "InsufficientInstanceCapacity",
		{InstanceType: "m5.large", Zone: "us-west-2b", CapacityType: "spot"}:      "MaxSpotInstanceCountExceeded",
		{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand"}: "VcpuLimitExceeded",
	}
	if diff := cmp.Diff(want, capacityErr.Reasons); diff != "" || len(capacityErr.Offerings) != 3 {
		t.Errorf("reasons (-want +got):\n%s\nofferings %v", diff, capacityErr.Offerings)
	}
	e.emulator.ClearFaults()
	e.clock.Step(aws.DefaultUnavailableOfferingsTTL + time.Second)
	if !offering("us-west-2a", "spot").Available {
		t.Error("the offering is still unavailable after the TTL")
	}
}

func TestRetriedLaunchDoesNotLaunchTwice(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand", "m5.large/us-west-2b/on-demand"))
	r.IdempotencyKey = "default-7f3a"
	first := e.create(t, r)
	second := e.create(t, r)
	if first.ID != second.ID || len(e.emulator.EC2Instances()) != 1 {
		t.Errorf("a retried launch made %s and %s (%d instances), want one", first.ID, second.ID, len(e.emulator.EC2Instances()))
	}
	if requests := e.emulator.FleetRequests(); len(requests) != 2 || !requests[1].Replayed || requests[0].ClientToken == "" {
		t.Errorf("fleet requests = %+v, want the second a replay of the first's token", requests)
	}
	r.IdempotencyKey = "default-8b1c"
	if third := e.create(t, r); third.ID == first.ID {
		t.Error("another launch got the first one's instance")
	}
}

// TestRetriedLaunchAnswersItsDeadInstanceAsTerminated: EC2 answers a client token with its
// first answer for a day, so a launch retried under the key of one whose instance terminated
// since gets that instance back: Create says it is shutting down, then terminated, so that the
// caller launches again under another key (issue 34, finding 1). Once EC2, an hour on, no longer
// describes the instance, Create returns it unread, with the provider ID the answer gave, for
// the caller to read again: the code before returned it terminated with no provider ID, which
// its NodeClaim recorded as no instance at all, resumed for ever.
func TestRetriedLaunchAnswersItsDeadInstanceAsTerminated(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand"))
	r.IdempotencyKey = "default-dead"
	first := e.create(t, r)
	if err := e.instances.Delete(context.Background(), first.ProviderID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after time.Duration
		state cloudprovider.InstanceState
	}{{0, cloudprovider.InstanceStateShuttingDown}, {terminatingDelay, cloudprovider.InstanceStateTerminated}, {time.Hour, ""}} {
		e.clock.Step(tc.after)
		type answer struct {
			launched []*cloudprovider.Instance
			err      error
		}
		done := make(chan answer, 1)
		go func() {
			launched, err := e.instances.Create(context.Background(), r)
			done <- answer{launched, err}
		}()
		var got answer
		for answered := false; !answered; {
			select {
			case got = <-done:
				answered = true
			case <-time.After(10 * time.Millisecond):
				// An instance EC2 forgot is looked for again after a delay on the clock.
				e.clock.Step(time.Second)
			}
		}
		if tc.state == "" {
			unread := (*cloudprovider.UnreadInstancesError)(nil)
			if len(got.launched) != 0 || !errors.As(got.err, &unread) || len(unread.Instances) != 1 || unread.Instances[0].ProviderID != first.ProviderID {
				t.Errorf("%s after the termination: Create = %+v, %v; want %s unread, with its provider ID", tc.after, got.launched, got.err, first.ID)
			}
			continue
		}
		if got.err != nil || len(got.launched) != 1 || got.launched[0].ID != first.ID || got.launched[0].State != tc.state {
			t.Errorf("%s after the termination: Create = %+v, %v; want %s %s", tc.after, got.launched, got.err, first.ID, tc.state)
		}
	}
	if n := len(e.emulator.EC2Instances()); n != 0 {
		t.Errorf("%d instances shown, want none: the retries launched nothing", n)
	}
}

// TestCreateReturnsTheInstancesItCouldNotReadBack: CreateFleet launched the instance but
// DescribeInstances is refused: Create returns it, as CreateFleet's answer tells it, in an
// UnreadInstancesError, and launches no other (issue 34, finding 9).
func TestCreateReturnsTheInstancesItCouldNotReadBack(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstances", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	r := request(e.candidates(t, "m5.large/us-west-2b/on-demand"))
	launched, err := e.instances.Create(context.Background(), r)
	var unread *cloudprovider.UnreadInstancesError
	if !errors.As(err, &unread) || len(launched) != 0 || len(unread.Instances) != 1 {
		t.Fatalf("Create = %v, %v; want one unread instance", launched, err)
	}
	running := e.emulator.EC2Instances()
	if got := unread.Instances[0]; len(running) != 1 || got.ID != running[0].InstanceID || got.ProviderID != running[0].ProviderID ||
		got.InstanceType != "m5.large" || got.Zone != "us-west-2b" || got.CapacityType != v1alpha5.CapacityTypeOnDemand || got.Labels["team"] != "ml" {
		t.Errorf("unread instance %+v, want the one launched: %+v", got, running)
	}
	e.emulator.ClearFaults()
	if instance, err := e.instances.Get(context.Background(), unread.Instances[0].ProviderID); err != nil || instance.NodeName != running[0].PrivateDNSName {
		t.Errorf("Get once EC2 answers = %+v, %v; want its node name %s", instance, err, running[0].PrivateDNSName)
	}
}

// TestAUsedUpVCPUQuotaIsToldNotSkipped: every offering refused for the vCPU quota fails the
// launch as VCPUQuotaExceeded, only the user can raise it, and the offerings stay offered, so
// that the next launch says so again rather than find nothing to launch (issue 34, finding 11).
func TestAUsedUpVCPUQuotaIsToldNotSkipped(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, InstanceType: "m5.large", Code: "VcpuLimitExceeded"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err := e.instances.Create(context.Background(), request(e.candidates(t, "m5.large/us-west-2a/on-demand", "m5.large/us-west-2b/on-demand")))
		required := cloudprovider.ActionRequired(err)
		var capacity *cloudprovider.InsufficientCapacityError
		if required == nil || required.Reason != cloudprovider.ReasonVCPUQuotaExceeded || !errors.As(err, &capacity) || len(capacity.Offerings) != 2 {
			t.Fatalf("Create = %v; want VCPUQuotaExceeded naming both offerings", err)
		}
	}
	for _, o := range e.instanceTypes(t, "")["m5.large"].Offerings {
		if !o.Available {
			t.Errorf("offering %s %s is not offered after a vCPU quota error", o.Zone, o.CapacityType)
		}
	}
}

func TestCreateWaitsForThePrivateDNSName(t *testing.T) {
	const pending = 3 * time.Second
	e := newInstancesEnvPending(t, launchSeed, 0, pending)
	e.refresh(t)
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand"))
	type result struct {
		instance *cloudprovider.Instance
		err      error
	}
	done := make(chan result, 1)
	go func() {
		launched, err := e.instances.Create(context.Background(), r)
		var instance *cloudprovider.Instance
		if len(launched) > 0 {
			instance = launched[0]
		}
		done <- result{instance, err}
	}()
	// EC2 knows the name once the instance runs; step the clock each time Create waits.
	for range pending / time.Second {
		eventually.Holds(t, "Create waits for the private DNS name", func() (bool, string, error) {
			return e.clock.HasWaiters(), "no waiter on the clock", nil
		})
		e.clock.Step(time.Second)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if instance := got.instance; instance.NodeName == "" || !strings.HasSuffix(instance.NodeName, ".us-west-2.compute.internal") {
		t.Errorf("node name = %q", got.instance.NodeName)
	}
}

func TestDeleteIsIdempotentAndListShowsTheClustersInstances(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	a := e.create(t, request(e.candidates(t, "m5.large/us-west-2a/on-demand")))
	b := e.create(t, request(e.candidates(t, "c5.large/us-west-2b/spot")))
	ids := func() []string {
		list, err := e.instances.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, i := range list {
			ids = append(ids, i.ID)
		}
		return ids
	}
	if diff := cmp.Diff([]string{a.ID, b.ID}, ids()); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	got, err := e.instances.Get(context.Background(), b.ProviderID)
	if err != nil || got.CapacityType != v1alpha5.CapacityTypeSpot || got.Labels[v1alpha5.ProvisionerNameLabelKey] != "default" {
		t.Errorf("Get = %+v, %v", got, err)
	}
	for range 2 {
		if err := e.instances.Delete(context.Background(), a.ProviderID); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
	if err := e.instances.Delete(context.Background(), "aws:///us-west-2a/i-0000000000000dead"); err != nil {
		t.Errorf("Delete of an unknown instance = %v", err)
	}
	if diff := cmp.Diff([]string{b.ID}, ids()); diff != "" {
		t.Errorf("List after Delete (-want +got):\n%s", diff)
	}
	// Shutting down it is still there (its NodeClaim waits for it to be gone): the code before
	// answered NotFound, and the NodeClaim went while the instance still held its volumes.
	if got, err := e.instances.Get(context.Background(), a.ProviderID); err != nil || got.State != cloudprovider.InstanceStateShuttingDown {
		t.Errorf("Get of a shutting-down instance = %+v, %v; want it, shutting down", got, err)
	}
	e.clock.Step(terminatingDelay)
	var notFound *cloudprovider.NotFoundError
	if _, err := e.instances.Get(context.Background(), a.ProviderID); !errors.As(err, &notFound) {
		t.Errorf("Get of a terminated instance = %v, want NotFoundError", err)
	}
	if err := e.instances.Delete(context.Background(), a.ProviderID); err != nil {
		t.Errorf("Delete of a terminated instance = %v", err)
	}
	if _, err := e.instances.Get(context.Background(), "i-123"); err == nil {
		t.Error("Get of a malformed provider id succeeded")
	}
}

func TestThrottlingAndServerErrorsAreRetried(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	for _, f := range []awsemulator.Fault{
		// Throttling slows the adaptive retryer's client for a while: only single calls are
		// throttled, so that the paginated reads stay quick.
		{Service: "ec2", Action: "DescribeInstanceTypes", Kind: awsemulator.FaultServerError, Times: maxAttempts - 1},
		{Service: "ec2", Action: "DescribeSpotPriceHistory", Kind: awsemulator.FaultServerError, Times: maxAttempts - 1},
		{Service: "pricing", Action: "GetProducts", Kind: awsemulator.FaultServerError, Times: maxAttempts - 1},
		{Service: "ec2", Action: "CreateFleet", Kind: awsemulator.FaultThrottle, Times: maxAttempts - 1},
		{Service: "ssm", Action: "GetParameter", Kind: awsemulator.FaultThrottle, Times: maxAttempts - 1},
		{Service: "ec2", Action: "CreateLaunchTemplate", Kind: awsemulator.FaultServerError, Times: maxAttempts - 1},
	} {
		if _, err := e.emulator.InjectFault(f); err != nil {
			t.Fatal(err)
		}
	}
	e.refresh(t)
	if err := e.instances.StalePrices(); err != nil {
		t.Errorf("StalePrices = %v after retried refreshes", err)
	}
	e.create(t, request(e.candidates(t, "m5.large/us-west-2a/on-demand")))
	if len(e.emulator.EC2Instances()) != 1 {
		t.Error("a CreateFleet retried after a server error launched more than one instance")
	}
}

func TestHungEC2IsBoundedByTheCallTimeout(t *testing.T) {
	const callTimeout = 500 * time.Millisecond
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	candidates := e.candidates(t, "m5.large/us-west-2a/on-demand")
	hung := newInstances(t, e.server.URL, e.clock, callTimeout)
	// A first launch resolves and caches the subnets, groups, AMI and template, so that the
	// launch below reaches CreateFleet.
	if _, err := hung.Create(context.Background(), request(candidates)); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"DescribeInstanceTypeOfferings", "CreateFleet", "TerminateInstances"} {
		if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: action, Kind: awsemulator.FaultHang}); err != nil {
			t.Fatal(err)
		}
	}
	for name, call := range map[string]func() error{
		"ec2:DescribeInstanceTypeOfferings": func() error { return hung.RefreshInstanceTypes(context.Background()) },
		"ec2:CreateFleet": func() error {
			_, err := hung.Create(context.Background(), request(candidates))
			return err
		},
		"ec2:TerminateInstances": func() error { return hung.Delete(context.Background(), "aws:///us-west-2a/i-0123456789abcdef0") },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "no answer within the AWS call timeout of 500ms") {
			t.Errorf("%s against a hung endpoint = %v, want the call timeout", name, err)
		}
	}
}

// EC2 bounds the overrides of a request: the cheapest candidates go first.
func TestFleetOverridesAreBounded(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	var candidates []cloudprovider.Candidate
	for _, it := range e.instanceTypes(t, "", corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}) {
		for _, o := range it.Offerings {
			if o.CapacityType == v1alpha5.CapacityTypeOnDemand && len(candidates) < 70 {
				candidates = append(candidates, cloudprovider.Candidate{InstanceType: it, Offering: o})
			}
		}
	}
	e.create(t, request(candidates))
	overrides := 0
	for _, c := range e.emulator.FleetRequests()[0].LaunchTemplateConfigs {
		overrides += len(c.Overrides)
	}
	if overrides != 60 {
		t.Errorf("%d overrides for %d candidates, want 60", overrides, len(candidates))
	}
}

func TestCreateLaunchesCountWithOneFleet(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand", "m5.large/us-west-2b/on-demand"))
	r.Count = 3
	r.IdempotencyKey = "default-group"
	launched, err := e.instances.Create(context.Background(), r)
	if err != nil || len(launched) != 3 {
		t.Fatalf("Create of 3 = %v, %v", launched, err)
	}
	names := map[string]bool{}
	for _, instance := range launched {
		names[instance.NodeName] = true
		if instance.NodeName == "" || instance.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
			t.Errorf("instance %+v has no node name or labels", instance)
		}
	}
	requests := e.emulator.FleetRequests()
	if len(names) != 3 || len(requests) != 1 || requests[0].TotalTargetCapacity != 3 {
		t.Errorf("%d distinct nodes from %d fleet requests (%+v), want 3 from one of capacity 3", len(names), len(requests), requests)
	}
	again, err := e.instances.Create(context.Background(), r)
	if err != nil || len(again) != 3 || len(e.emulator.EC2Instances()) != 3 {
		t.Errorf("a retried group launch = %d instances (%v), %d in EC2; want the same 3", len(again), err, len(e.emulator.EC2Instances()))
	}
}

// A launch's instances are read back in one DescribeInstances call, not one each (a 40-node
// launch made 40 calls, 10 at a time).
func TestCreateReadsALaunchBackInOneCall(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	// A latency fault on every call changes nothing but counts them.
	counter, err := e.emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstances", Kind: awsemulator.FaultLatency,
		Latency: awsemulator.Duration(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand"))
	r.Count = 5
	launched, err := e.instances.Create(context.Background(), r)
	if err != nil || len(launched) != 5 {
		t.Fatalf("Create of 5 = %v, %v", launched, err)
	}
	for _, instance := range launched {
		if instance.NodeName == "" {
			t.Errorf("instance %s read back without its node name", instance.ID)
		}
	}
	if calls := e.emulator.FaultHits(counter); calls != 1 {
		t.Errorf("%d DescribeInstances calls read back 5 instances, want 1", calls)
	}
}

// A securityGroupSelector that selects no group fails the launch as the user's to fix, naming
// the block's field.
func TestNoSecurityGroupNamesTheBlocksSelector(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	r := request(e.candidates(t, "m5.large/us-west-2a/on-demand"))
	r.Provider = provider(`{"securityGroupSelector":{"Name":"missing"}}`)
	_, err := e.instances.Create(context.Background(), r)
	var required *cloudprovider.ActionRequiredError
	if !errors.As(err, &required) || required.Reason != cloudprovider.ReasonInvalidSecurityGroup || required.Field != "spec.provider.securityGroupSelector" ||
		!strings.Contains(err.Error(), "no security group matches securityGroupSelector map[Name:missing]") {
		t.Errorf("Create = %v, want action required on spec.provider.securityGroupSelector naming the selector", err)
	}
}
