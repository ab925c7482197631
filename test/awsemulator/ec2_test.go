package awsemulator_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"karpenter.sh/karpenter/test/awsemulator"
)

// vpcSeed is a VPC of three subnets and two security groups, tagged as a cluster's.
const vpcSeed = `
subnets:
- {id: subnet-a, availabilityZone: us-west-2a, tags: {kubernetes.io/cluster/demo: shared, Name: private-a}}
- {id: subnet-b, availabilityZone: us-west-2b, cidrBlock: 10.0.32.0/20, tags: {kubernetes.io/cluster/demo: shared, Name: private-b}}
- {id: subnet-other, availabilityZone: us-west-2c, availableIpAddressCount: 0, tags: {Name: other}}
securityGroups:
- {id: sg-nodes, name: demo-nodes, tags: {kubernetes.io/cluster/demo: owned}}
- {id: sg-other, name: other}
`

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: sdkaws.String(name), Values: values}
}

func TestDescribeInstanceTypesReportsTheRealCatalogue(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, "")
	client := ec2.NewFromConfig(cfg)
	type want struct {
		vcpus      int32
		memoryMiB  int64
		enis, ipv4 int32
		arch       string
		gpus       int32
	}
	known := map[string]want{
		"m5.large":    {2, 8192, 3, 10, "x86_64", 0},
		"m5.xlarge":   {4, 16384, 4, 15, "x86_64", 0},
		"m5.24xlarge": {96, 393216, 15, 50, "x86_64", 0},
		"c5.large":    {2, 4096, 3, 10, "x86_64", 0},
		"c5.xlarge":   {4, 8192, 4, 15, "x86_64", 0},
		"r5.large":    {2, 16384, 3, 10, "x86_64", 0},
		"r5.24xlarge": {96, 786432, 15, 50, "x86_64", 0},
		"t3.nano":     {2, 512, 2, 2, "x86_64", 0},
		"t3.micro":    {2, 1024, 2, 2, "x86_64", 0},
		"t3.large":    {2, 8192, 3, 12, "x86_64", 0},
		"m6g.large":   {2, 8192, 3, 10, "arm64", 0},
		"c6g.xlarge":  {4, 8192, 4, 15, "arm64", 0},
		"p3.2xlarge":  {8, 62464, 4, 15, "x86_64", 1},
	}
	out, err := client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large", "m5.xlarge", "m5.24xlarge", "c5.large", "c5.xlarge", "r5.large", "r5.24xlarge", "t3.nano", "t3.micro", "t3.large", "m6g.large", "c6g.xlarge", "p3.2xlarge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != len(known) {
		t.Fatalf("got %d types, want %d", len(out.InstanceTypes), len(known))
	}
	for _, it := range out.InstanceTypes {
		w := known[string(it.InstanceType)]
		got := want{
			vcpus: sdkaws.ToInt32(it.VCpuInfo.DefaultVCpus), memoryMiB: sdkaws.ToInt64(it.MemoryInfo.SizeInMiB),
			enis: sdkaws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces), ipv4: sdkaws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface),
			arch: string(it.ProcessorInfo.SupportedArchitectures[0]),
		}
		if it.GpuInfo != nil {
			got.gpus = sdkaws.ToInt32(it.GpuInfo.Gpus[0].Count)
		}
		if got != w {
			t.Errorf("%s = %+v, want %+v", it.InstanceType, got, w)
		}
		if !slices.Contains(it.SupportedUsageClasses, ec2types.UsageClassTypeSpot) || !slices.Contains(it.SupportedVirtualizationTypes, ec2types.VirtualizationTypeHvm) ||
			sdkaws.ToBool(it.BareMetal) || it.Hypervisor == "" {
			t.Errorf("%s: usage %v, virtualization %v, bare metal %v, hypervisor %q", it.InstanceType, it.SupportedUsageClasses, it.SupportedVirtualizationTypes, sdkaws.ToBool(it.BareMetal), it.Hypervisor)
		}
	}

	_, err = client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}})
	if code := errorCode(err); code != "InvalidInstanceType" {
		t.Errorf("unknown type: code %q (%v), want InvalidInstanceType", code, err)
	}
}

// Instance-store disks are reported as EC2 does, from the dataset: their total, each disk's
// size and kind, and whether they are NVMe devices; a type without has none.
func TestDescribeInstanceTypesReportsInstanceStorage(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, "")
	client := ec2.NewFromConfig(cfg)
	type storage struct {
		supported       bool
		totalGB, diskGB int64
		disks           int32
		diskType        ec2types.DiskType
		nvme            ec2types.EphemeralNvmeSupport
	}
	want := map[string]storage{
		"c5d.large":    {true, 50, 50, 1, ec2types.DiskTypeSsd, ec2types.EphemeralNvmeSupportRequired},
		"c5d.24xlarge": {true, 3600, 900, 4, ec2types.DiskTypeSsd, ec2types.EphemeralNvmeSupportRequired},
		"d3.xlarge":    {true, 5940, 1980, 3, ec2types.DiskTypeHdd, ec2types.EphemeralNvmeSupportRequired},
		"h1.2xlarge":   {true, 2000, 2000, 1, ec2types.DiskTypeHdd, ec2types.EphemeralNvmeSupportUnsupported},
		"c5.large":     {},
	}
	out, err := client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"c5d.large", "c5d.24xlarge", "d3.xlarge", "h1.2xlarge", "c5.large"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != len(want) {
		t.Fatalf("got %d types, want %d", len(out.InstanceTypes), len(want))
	}
	for _, it := range out.InstanceTypes {
		got := storage{supported: sdkaws.ToBool(it.InstanceStorageSupported)}
		if s := it.InstanceStorageInfo; s != nil {
			got.totalGB, got.nvme = sdkaws.ToInt64(s.TotalSizeInGB), s.NvmeSupport
			if len(s.Disks) != 1 {
				t.Fatalf("%s: disks %+v, want one kind", it.InstanceType, s.Disks)
			}
			got.diskGB, got.disks, got.diskType = sdkaws.ToInt64(s.Disks[0].SizeInGB), sdkaws.ToInt32(s.Disks[0].Count), s.Disks[0].Type
		}
		if got != want[string(it.InstanceType)] {
			t.Errorf("%s instance storage = %+v, want %+v", it.InstanceType, got, want[string(it.InstanceType)])
		}
	}
}

func TestDescribeInstanceTypesPaginatesAndFilters(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, "")
	client := ec2.NewFromConfig(cfg)
	all := func(in *ec2.DescribeInstanceTypesInput) ([]string, int) {
		t.Helper()
		var names []string
		pages := 0
		for p := ec2.NewDescribeInstanceTypesPaginator(client, in); p.HasMorePages(); {
			out, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range out.InstanceTypes {
				names = append(names, string(it.InstanceType))
			}
		}
		return names, pages
	}
	names, pages := all(&ec2.DescribeInstanceTypesInput{})
	if len(names) < 500 || pages != (len(names)+99)/100 {
		t.Errorf("got %d types over %d pages, want hundreds by pages of 100", len(names), pages)
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("pages overlap or skip")
	}
	small, pages := all(&ec2.DescribeInstanceTypesInput{MaxResults: sdkaws.Int32(7)})
	if !slices.Equal(small, names) || pages != (len(names)+6)/7 {
		t.Errorf("MaxResults=7: %d types over %d pages", len(small), pages)
	}

	arm, _ := all(&ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		filter("instance-type", "m6g.*", "c6g.*"), filter("processor-info.supported-architecture", "arm64"),
	}})
	if len(arm) < 10 || !slices.Contains(arm, "m6g.large") || slices.ContainsFunc(arm, func(n string) bool {
		return !strings.HasPrefix(n, "m6g") && !strings.HasPrefix(n, "c6g")
	}) {
		t.Errorf("m6g/c6g arm64 filter = %v", arm)
	}
	metal, _ := all(&ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter("bare-metal", "true"), filter("instance-type", "m5.*")}})
	if !slices.Equal(metal, []string{"m5.metal"}) {
		t.Errorf("bare metal m5 = %v, want [m5.metal]", metal)
	}

	_, err := client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{MaxResults: sdkaws.Int32(101)})
	if code := errorCode(err); code != "InvalidParameterValue" {
		t.Errorf("MaxResults=101: code %q (%v)", code, err)
	}
	_, err = client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter("no-such-filter", "x")}})
	if code := errorCode(err); code != "InvalidParameterValue" {
		t.Errorf("unknown filter: code %q (%v)", code, err)
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, `
catalogue:
  instanceTypes: [m5.large, m5.xlarge, p3.2xlarge]
  offerings: {p3.2xlarge: [us-west-2b, us-west-2c]}
`)
	client := ec2.NewFromConfig(cfg)
	var got []string
	for p := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: sdkaws.Int32(5),
	}); p.HasMorePages(); {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.InstanceTypeOfferings {
			if o.LocationType != ec2types.LocationTypeAvailabilityZone {
				t.Errorf("location type %q", o.LocationType)
			}
			got = append(got, string(o.InstanceType)+"@"+sdkaws.ToString(o.Location))
		}
	}
	want := []string{
		"m5.large@us-west-2a", "m5.large@us-west-2b", "m5.large@us-west-2c", "m5.large@us-west-2d",
		"m5.xlarge@us-west-2a", "m5.xlarge@us-west-2b", "m5.xlarge@us-west-2c", "m5.xlarge@us-west-2d",
		"p3.2xlarge@us-west-2b", "p3.2xlarge@us-west-2c",
	}
	if !slices.Equal(got, want) {
		t.Errorf("offerings = %v, want %v", got, want)
	}

	out, err := client.DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters:      []ec2types.Filter{filter("location", "us-west-2b"), filter("instance-type", "p3.*")},
	})
	if err != nil || len(out.InstanceTypeOfferings) != 1 {
		t.Errorf("filtered offerings = %+v, %v; want p3.2xlarge in us-west-2b", out, err)
	}
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, "")
	client := ec2.NewFromConfig(cfg)
	out, err := client.DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	var prev float64
	for _, p := range out.SpotPriceHistory {
		zones = append(zones, sdkaws.ToString(p.AvailabilityZone))
		price := parsePrice(t, sdkaws.ToString(p.SpotPrice))
		if price <= 0 || price >= 0.096 || price < prev || p.Timestamp == nil {
			t.Errorf("%s: spot price %v after %v (on demand 0.096), timestamp %v", sdkaws.ToString(p.AvailabilityZone), price, prev, p.Timestamp)
		}
		prev = price
	}
	if !slices.Equal(zones, []string{"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}) {
		t.Errorf("zones = %v, want one latest price per zone of us-west-2", zones)
	}

	var total int
	for p := ec2.NewDescribeSpotPriceHistoryPaginator(client, &ec2.DescribeSpotPriceHistoryInput{
		Filters: []ec2types.Filter{filter("product-description", "Linux/UNIX"), filter("instance-type", "c5.*")},
	}); p.HasMorePages(); {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		total += len(page.SpotPriceHistory)
	}
	if total < 4*8 || total%4 != 0 {
		t.Errorf("c5.* spot prices = %d, want 4 zones of each c5 size", total)
	}
}

func TestDescribeSubnetsAndSecurityGroups(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, vpcSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()

	subnets, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:kubernetes.io/cluster/demo", "*")}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range subnets.Subnets {
		ids = append(ids, sdkaws.ToString(s.SubnetId))
	}
	if !slices.Equal(ids, []string{"subnet-a", "subnet-b"}) {
		t.Errorf("cluster subnets = %v", ids)
	}
	b := subnets.Subnets[1]
	if sdkaws.ToString(b.AvailabilityZone) != "us-west-2b" || sdkaws.ToString(b.CidrBlock) != "10.0.32.0/20" ||
		sdkaws.ToInt32(b.AvailableIpAddressCount) != 4091 || len(b.Tags) != 2 || sdkaws.ToString(b.VpcId) == "" {
		t.Errorf("subnet-b = %+v", b)
	}
	byKey, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag-key", "Name"), filter("availability-zone", "us-west-2c")}})
	if err != nil || len(byKey.Subnets) != 1 || sdkaws.ToString(byKey.Subnets[0].SubnetId) != "subnet-other" {
		t.Errorf("tag-key and zone filter = %+v, %v", byKey, err)
	}
	_, err = client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-missing"}})
	if code := errorCode(err); code != "InvalidSubnetID.NotFound" {
		t.Errorf("unknown subnet: code %q (%v)", code, err)
	}

	groups, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:kubernetes.io/cluster/demo", "owned")}})
	if err != nil || len(groups.SecurityGroups) != 1 || sdkaws.ToString(groups.SecurityGroups[0].GroupId) != "sg-nodes" || sdkaws.ToString(groups.SecurityGroups[0].GroupName) != "demo-nodes" {
		t.Errorf("cluster security groups = %+v, %v", groups, err)
	}
	_, err = client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-missing"}})
	if code := errorCode(err); code != "InvalidGroup.NotFound" {
		t.Errorf("unknown security group: code %q (%v)", code, err)
	}
}

func TestEC2Faults(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, vpcSeed)
	cfg.RetryMaxAttempts, cfg.Retryer = 0, quickRetries(3)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()

	var injected []awsemulator.FaultID
	for _, f := range []awsemulator.Fault{{Service: "ec2", Action: "DescribeSubnets", Kind: awsemulator.FaultThrottle, Times: 1}, {Service: "ec2", Kind: awsemulator.FaultServerError, Times: 1}} {
		id, err := e.InjectFault(f)
		if err != nil {
			t.Fatal(err)
		}
		injected = append(injected, id)
	}
	if _, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("throttled then failed once, retried: %v", err)
	}
	if hits := []int{e.FaultHits(injected[0]), e.FaultHits(injected[1])}; !slices.Equal(hits, []int{1, 1}) {
		t.Errorf("fault hits = %v, want [1 1]", hits)
	}
	e.ClearFaults()

	if _, err := e.InjectFault(awsemulator.Fault{Service: "ec2", Kind: awsemulator.FaultThrottle}); err != nil {
		t.Fatal(err)
	}
	_, err := client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{})
	if code := errorCode(err); code != "RequestLimitExceeded" {
		t.Errorf("throttled throughout: code %q (%v), want RequestLimitExceeded", code, err)
	}
	e.ClearFaults()

	if _, err := e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSecurityGroups", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	_, err = client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if code := errorCode(err); code != "UnauthorizedOperation" {
		t.Errorf("access denied: code %q (%v), want UnauthorizedOperation", code, err)
	}
}

func parsePrice(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("price %q, %v", s, err)
	}
	return v
}

// quickRetries retries as the SDK's standard retryer does, without waiting between attempts.
func quickRetries(attempts int) func() sdkaws.Retryer {
	return func() sdkaws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	}
}

func TestOfferingsFollowTheDataset(t *testing.T) {
	for _, tt := range []struct {
		region, instanceType string
		want                 []string
	}{
		{"us-west-2", "m5.large", []string{"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}},
		{"us-west-2", "p3.2xlarge", []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		// us-east-1c (use1-az3) offers few types.
		{"us-east-1", "m5.large", []string{"us-east-1a", "us-east-1b", "us-east-1d", "us-east-1e", "us-east-1f"}},
		{"eu-west-1", "p3.2xlarge", []string{"eu-west-1b", "eu-west-1c"}},
	} {
		t.Run(tt.region+"/"+tt.instanceType, func(t *testing.T) {
			_, cfg := start(t, awsemulator.Options{Region: tt.region}, "")
			out, err := ec2.NewFromConfig(cfg).DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
				LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{filter("instance-type", tt.instanceType)},
			})
			if err != nil {
				t.Fatal(err)
			}
			var zones []string
			for _, o := range out.InstanceTypeOfferings {
				zones = append(zones, sdkaws.ToString(o.Location))
			}
			if !slices.Equal(zones, tt.want) {
				t.Errorf("zones = %v, want %v", zones, tt.want)
			}
		})
	}
}

// TestSubnetsAndSecurityGroupsAnswerV1SelectorTerms: the DescribeSubnets and
// DescribeSecurityGroups queries an EC2NodeClass's subnetSelectorTerms (tags | id) and
// securityGroupSelectorTerms (tags | id | name) become, paginated by 500 as upstream asks, and
// the zone ids its status reports.
func TestSubnetsAndSecurityGroupsAnswerV1SelectorTerms(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, `
subnets:
- {id: subnet-a, availabilityZone: us-west-2a, tags: {karpenter.sh/discovery: demo, Name: private-a}}
- {id: subnet-b, availabilityZone: us-west-2b, tags: {karpenter.sh/discovery: demo, kubernetes.io/role/internal-elb: "1"}}
- {id: subnet-c, availabilityZone: us-west-2c, availabilityZoneId: usw2-az4, tags: {karpenter.sh/discovery: other}}
- {id: subnet-d, availabilityZone: us-west-2a, tags: {Name: public-a}}
securityGroups:
- {id: sg-nodes, name: demo-nodes, tags: {karpenter.sh/discovery: demo}}
- {id: sg-cluster, name: eks-cluster-sg-demo-1234, tags: {aws:eks:cluster-name: demo}}
- {id: sg-other, name: other}
`)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()

	subnetTests := []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"tags", []ec2types.Filter{filter("tag:karpenter.sh/discovery", "demo")}, []string{"subnet-a", "subnet-b"}},
		{"two tags of one term", []ec2types.Filter{filter("tag:karpenter.sh/discovery", "demo"), filter("tag:Name", "private-a")}, []string{"subnet-a"}},
		{"tag with any value (*)", []ec2types.Filter{filter("tag-key", "karpenter.sh/discovery")}, []string{"subnet-a", "subnet-b", "subnet-c"}},
		{"tag value wildcard", []ec2types.Filter{filter("tag:Name", "*-a")}, []string{"subnet-a", "subnet-d"}},
		{"ids, one that does not exist", []ec2types.Filter{filter("subnet-id", "subnet-c", "subnet-missing", "subnet-a")}, []string{"subnet-a", "subnet-c"}},
		{"zone id", []ec2types.Filter{filter("availability-zone-id", "usw2-az1")}, []string{"subnet-a", "subnet-d"}},
		{"nothing matches", []ec2types.Filter{filter("tag:karpenter.sh/discovery", "missing")}, nil},
	}
	for _, tt := range subnetTests {
		t.Run("subnets/"+tt.name, func(t *testing.T) {
			var got []string
			for p := ec2.NewDescribeSubnetsPaginator(client, &ec2.DescribeSubnetsInput{Filters: tt.filters, MaxResults: sdkaws.Int32(500)}); p.HasMorePages(); {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range out.Subnets {
					got = append(got, sdkaws.ToString(s.SubnetId))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("subnets = %v, want %v", got, tt.want)
			}
		})
	}
	out, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	zoneIDs := map[string]string{}
	for _, s := range out.Subnets {
		zoneIDs[sdkaws.ToString(s.SubnetId)] = sdkaws.ToString(s.AvailabilityZone) + "=" + sdkaws.ToString(s.AvailabilityZoneId)
	}
	if want := map[string]string{"subnet-a": "us-west-2a=usw2-az1", "subnet-b": "us-west-2b=usw2-az2", "subnet-c": "us-west-2c=usw2-az4", "subnet-d": "us-west-2a=usw2-az1"}; !maps.Equal(zoneIDs, want) {
		t.Errorf("zone ids = %v, want %v", zoneIDs, want)
	}

	groupTests := []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"tags", []ec2types.Filter{filter("tag:karpenter.sh/discovery", "demo")}, []string{"sg-nodes"}},
		{"tag with any value (*)", []ec2types.Filter{filter("tag-key", "aws:eks:cluster-name")}, []string{"sg-cluster"}},
		{"ids, one that does not exist", []ec2types.Filter{filter("group-id", "sg-other", "sg-missing", "sg-nodes")}, []string{"sg-nodes", "sg-other"}},
		{"names", []ec2types.Filter{filter("group-name", "demo-nodes", "other")}, []string{"sg-nodes", "sg-other"}},
		{"name wildcard", []ec2types.Filter{filter("group-name", "eks-cluster-sg-demo-*")}, []string{"sg-cluster"}},
		{"nothing matches", []ec2types.Filter{filter("group-name", "missing")}, nil},
	}
	for _, tt := range groupTests {
		t.Run("security groups/"+tt.name, func(t *testing.T) {
			var got []string
			for p := ec2.NewDescribeSecurityGroupsPaginator(client, &ec2.DescribeSecurityGroupsInput{Filters: tt.filters, MaxResults: sdkaws.Int32(500)}); p.HasMorePages(); {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range out.SecurityGroups {
					got = append(got, sdkaws.ToString(g.GroupId))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("security groups = %v, want %v", got, tt.want)
			}
		})
	}
}
