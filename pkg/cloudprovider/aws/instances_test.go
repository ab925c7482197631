package aws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
)

// vpcSeed is a cluster's VPC: its subnets in two of the region's zones, a subnet and a group of
// another cluster, and its nodes' security group.
const vpcSeed = `
subnets:
- {id: subnet-a, availabilityZone: us-west-2a, tags: {kubernetes.io/cluster/demo: shared, Name: private-a}}
- {id: subnet-a2, availabilityZone: us-west-2a, availableIpAddressCount: 3, tags: {kubernetes.io/cluster/demo: shared, Name: small-a}}
- {id: subnet-b, availabilityZone: us-west-2b, tags: {kubernetes.io/cluster/demo: shared, Name: private-b}}
- {id: subnet-other, availabilityZone: us-west-2c, tags: {kubernetes.io/cluster/other: shared}}
securityGroups:
- {id: sg-nodes, name: demo-nodes, tags: {kubernetes.io/cluster/demo: owned}}
- {id: sg-other, name: other, tags: {kubernetes.io/cluster/other: owned}}
`

type instancesEnv struct {
	emulator  *awsemulator.Emulator
	server    *httptest.Server
	clock     *clocktesting.FakeClock
	instances *aws.Instances
	ec2       *ec2.Client
}

// isolateInstancesFromHost is isolateFromHost for the services Instances calls too.
func isolateInstancesFromHost(t *testing.T) {
	isolateFromHost(t)
	for _, v := range []string{"AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_PRICING"} {
		t.Setenv(v, "")
	}
}

// newInstancesEnv serves an emulator seeded with seed and builds Instances for cluster demo
// against it, with the catalogue and prices read once.
func newInstancesEnv(t *testing.T, seed string, callTimeout time.Duration) *instancesEnv {
	t.Helper()
	return newInstancesEnvPending(t, seed, callTimeout, 0)
}

// newInstancesEnvPending is newInstancesEnv with instances pending for pending before they run
// (and EC2 knows their private DNS name).
func newInstancesEnvPending(t *testing.T, seed string, callTimeout, pending time.Duration) *instancesEnv {
	t.Helper()
	isolateInstancesFromHost(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	// Pending instances hide their address, so that Create's wait for the DNS name is tested.
	e, srv := awstest.Serve(t, awsemulator.Options{Clock: clk, PendingDelay: pending, TerminatingDelay: terminatingDelay, AddressOnlyWhenRunning: pending > 0}, seed)
	client := ec2.NewFromConfig(sdkaws.Config{
		Region:       "us-west-2",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: sdkaws.String(srv.URL),
		HTTPClient:   aws.GuardRequestBodies(awshttp.NewBuildableClient()),
	})
	return &instancesEnv{emulator: e, server: srv, clock: clk, instances: newInstances(t, srv.URL, clk, callTimeout), ec2: client}
}

// newInstances builds Instances for cluster demo against the emulator at url; configure
// changes the options first.
func newInstances(t *testing.T, url string, clk *clocktesting.FakeClock, callTimeout time.Duration, configure ...func(*aws.InstancesOptions)) *aws.Instances {
	t.Helper()
	p, err := aws.New(context.Background(),
		aws.Options{Region: "us-west-2", MaxAttempts: maxAttempts, MaxBackoff: 5 * time.Millisecond, Clock: clk, CallTimeout: callTimeout},
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	opts := aws.InstancesOptions{
		ClusterName:            "demo",
		ClusterEndpoint:        "https://demo.gr7.us-west-2.eks.amazonaws.com",
		ClusterCABundle:        []byte("-----BEGIN CERTIFICATE-----\ndemo\n-----END CERTIFICATE-----\n"),
		KubernetesVersion:      "1.34",
		DefaultInstanceProfile: "KarpenterNodeInstanceProfile-demo",
		Clock:                  clk,
	}
	for _, c := range configure {
		c(&opts)
	}
	instances, err := p.Instances(opts)
	if err != nil {
		t.Fatal(err)
	}
	return instances
}

func (e *instancesEnv) refresh(t *testing.T) {
	t.Helper()
	if err := e.instances.RefreshInstanceTypes(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.instances.RefreshPrices(context.Background())
}

func provider(block string) *runtime.RawExtension {
	if block == "" {
		return nil
	}
	return &runtime.RawExtension{Raw: []byte(block)}
}

func (e *instancesEnv) instanceTypes(t *testing.T, block string, requirements ...corev1.NodeSelectorRequirement) map[string]*cloudprovider.InstanceType {
	t.Helper()
	types, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{Requirements: requirements, Provider: provider(block)})
	if err != nil {
		t.Fatalf("InstanceTypes = %v", err)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	return byName
}

// The node shapes are what an EKS node of each type reports: figures from EKS's max-pods list
// and kube-reserved formula, and the 7.5% memory the hypervisor keeps (docs/aws.md).
func TestInstanceTypesHaveTheNodesCapacityAndOverhead(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	e.refresh(t)
	types := e.instanceTypes(t, "")
	for _, want := range []struct {
		name, arch      string
		cpu, pods       int64
		memoryMi        int64
		reservedCPUm    int64
		reservedMemMi   int64
		allocatableCPUm int64
		// ebsVolumes: 28 Nitro slots less the root volume and every network interface; p3
		// runs on Xen, with 39 slots for EBS alone.
		ebsVolumes int64
	}{
		{"t3.micro", "amd64", 2, 4, 947, 70, 399, 1930, 25},
		{"t3.small", "amd64", 2, 11, 1894, 70, 476, 1930, 24},
		{"t3.medium", "amd64", 2, 17, 3788, 70, 542, 1930, 24},
		{"m5.large", "amd64", 2, 29, 7577, 70, 674, 1930, 24},
		{"m5.xlarge", "amd64", 4, 58, 15155, 80, 993, 3920, 23},
		{"m5.4xlarge", "amd64", 16, 234, 60620, 110, 2929, 15890, 19},
		{"m5.24xlarge", "amd64", 96, 737, 363724, 310, 8462, 95690, 12},
		{"c5.large", "amd64", 2, 29, 3788, 70, 674, 1930, 24},
		{"c5.xlarge", "amd64", 4, 58, 7577, 80, 993, 3920, 23},
		{"r5.large", "amd64", 2, 29, 15155, 70, 674, 1930, 24},
		{"m6g.large", "arm64", 2, 29, 7577, 70, 674, 1930, 24},
		{"c6g.xlarge", "arm64", 4, 58, 7577, 80, 993, 3920, 23},
		{"p3.2xlarge", "amd64", 8, 58, 57779, 90, 993, 7910, 38},
	} {
		it, ok := types[want.name]
		if !ok {
			t.Errorf("%s is not offered", want.name)
			continue
		}
		check := func(what string, got resource.Quantity, want resource.Quantity) {
			if got.Cmp(want) != 0 {
				t.Errorf("%s %s = %s, want %s", it.Name, what, got.String(), want.String())
			}
		}
		check("cpu", it.Capacity[corev1.ResourceCPU], *resource.NewQuantity(want.cpu, resource.DecimalSI))
		check("pods", it.Capacity[corev1.ResourcePods], *resource.NewQuantity(want.pods, resource.DecimalSI))
		check("memory", it.Capacity[corev1.ResourceMemory], *resource.NewQuantity(want.memoryMi<<20, resource.BinarySI))
		check("cpu overhead", it.Overhead[corev1.ResourceCPU], *resource.NewMilliQuantity(want.reservedCPUm, resource.DecimalSI))
		check("memory overhead", it.Overhead[corev1.ResourceMemory], *resource.NewQuantity(want.reservedMemMi<<20, resource.BinarySI))
		check("allocatable cpu", it.Allocatable()[corev1.ResourceCPU], *resource.NewMilliQuantity(want.allocatableCPUm, resource.DecimalSI))
		if got := it.VolumeLimits[cloudprovider.EBSCSIDriver]; got != want.ebsVolumes {
			t.Errorf("%s EBS volume limit = %d, want %d", it.Name, got, want.ebsVolumes)
		}
		if it.Labels[corev1.LabelArchStable] != want.arch || it.Labels[corev1.LabelOSStable] != "linux" {
			t.Errorf("%s labels = %v, want arch %s, os linux", it.Name, it.Labels, want.arch)
		}
		// The cluster's subnets are in us-west-2a and b: only those zones are offered.
		if len(it.Offerings) != 4 {
			t.Errorf("%s offerings = %+v, want on-demand and spot in us-west-2a and b", it.Name, it.Offerings)
		}
		for _, o := range it.Offerings {
			if (o.Zone != "us-west-2a" && o.Zone != "us-west-2b") || o.Price <= 0 || !o.Available {
				t.Errorf("%s offering %+v", it.Name, o)
			}
		}
	}
	if _, ok := types["m5.metal"]; ok {
		t.Error("bare metal m5.metal is offered")
	}
}

// TestInstanceTypesAreWhatTheSandboxKubeletReports: for every type offered, the node shape the
// provider plans with is what the emulator's kubelet (the sandbox's node joiner) reports, each
// computed on its own, so that kube-scheduler in the sandbox finds the room the plan counted on.
func TestInstanceTypesAreWhatTheSandboxKubeletReports(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	e.refresh(t)
	for _, it := range e.instanceTypes(t, "") {
		allocatable := it.Allocatable()
		for name, shape := range map[string]struct {
			provider corev1.ResourceList
			kubelet  map[string]string
		}{
			"capacity":    {it.Capacity, e.emulator.NodeCapacity(it.Name)},
			"allocatable": {allocatable, e.emulator.NodeAllocatable(it.Name)},
		} {
			for _, resourceName := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
				reported, err := resource.ParseQuantity(shape.kubelet[string(resourceName)])
				if err != nil {
					t.Fatalf("%s %s %s = %q, %v", it.Name, name, resourceName, shape.kubelet[string(resourceName)], err)
				}
				if planned := shape.provider[resourceName]; planned.Cmp(reported) != 0 {
					t.Errorf("%s %s %s: planned %s, the kubelet reports %s", it.Name, name, resourceName, planned.String(), reported.String())
				}
			}
		}
	}
}

func TestInstanceTypesMeetTheRequirements(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	e.refresh(t)
	types := e.instanceTypes(t, "",
		corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
		corev1.NodeSelectorRequirement{Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeOnDemand}},
		corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"us-west-2b"}},
		// Not a label of instance types: the Provisioner's own.
		corev1.NodeSelectorRequirement{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"ml"}},
	)
	if len(types) < 10 {
		t.Fatalf("%d arm64 types, want dozens", len(types))
	}
	for _, it := range types {
		if it.Labels[corev1.LabelArchStable] != "arm64" {
			t.Errorf("%s is %s", it.Name, it.Labels[corev1.LabelArchStable])
		}
		for _, o := range it.Offerings {
			if o.Zone != "us-west-2a" || o.CapacityType != v1alpha5.CapacityTypeOnDemand {
				t.Errorf("%s offering %+v", it.Name, o)
			}
		}
	}
}

func TestSubnetSelectorNarrowsTheZones(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	e.refresh(t)
	for _, o := range e.instanceTypes(t, `{"subnetSelector":{"Name":"private-b"}}`)["m5.large"].Offerings {
		if o.Zone != "us-west-2b" {
			t.Errorf("subnet private-b selects an offering in %s", o.Zone)
		}
	}
	if len(e.instanceTypes(t, `{"subnetSelector":{"kubernetes.io/cluster/other":"*"}}`)["m5.large"].Offerings) != 2 {
		t.Error("the other cluster's subnet is in one zone: want two offerings")
	}
	_, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{Provider: provider(`{"subnetSelector":{"Name":"missing"}}`)})
	if err == nil || !strings.Contains(err.Error(), "no subnet matches subnetSelector map[Name:missing]") {
		t.Errorf("InstanceTypes with no subnet = %v, want an error naming the selector", err)
	}
	if _, err := e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{Provider: provider(`{"bogus":1}`)}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("InstanceTypes with an invalid block = %v", err)
	}
}

func TestInstanceTypesBeforeTheCatalogueIsReadFail(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstanceTypes", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	err := e.instances.RefreshInstanceTypes(context.Background())
	var denied *cloudprovider.AccessDeniedError
	if !errors.As(err, &denied) || denied.Action != "ec2:DescribeInstanceTypes" {
		t.Fatalf("RefreshInstanceTypes = %v, want access denied naming ec2:DescribeInstanceTypes", err)
	}
	_, err = e.instances.InstanceTypes(context.Background(), cloudprovider.Constraints{})
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), "no instance types read yet") {
		t.Errorf("InstanceTypes = %v, want the refresh's error", err)
	}
}

// Start reads the catalogue and the prices at once, then on every refresh period.
func TestStartRefreshesInTheBackground(t *testing.T) {
	e := newInstancesEnv(t, vpcSeed, 0)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultAccessDenied, Times: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.instances.Start(ctx) }()
	eventually.Holds(t, "the catalogue is read on start", func() (bool, string, error) {
		_, err := e.instances.InstanceTypes(ctx, cloudprovider.Constraints{})
		// The tickers wait on the clock once the first reads are done.
		return err == nil && e.instances.StalePrices() != nil && e.clock.HasWaiters(), fmt.Sprintf("InstanceTypes: %v, StalePrices: %v", err, e.instances.StalePrices()), nil
	})
	e.clock.Step(aws.DefaultPricingRefresh)
	eventually.Holds(t, "prices are read again on the pricing period", func() (bool, string, error) {
		err := e.instances.StalePrices()
		return err == nil, fmt.Sprint(err), nil
	})
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("Start = %v", err)
	}
}
