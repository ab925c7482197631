package awsemulator_test

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
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/test/awsemulator"
)

// imagesSeed is an account's own AMIs beside a partner's shared with it; the clock of the
// tests below stands at 2026-03-01, after two of them were deprecated.
const imagesSeed = vpcSeed + `
instanceProfiles: [KarpenterNodeInstanceProfile]
images:
- ami-0123456789abcdef0
- {id: ami-00000000000000a01, name: team-al2023-2026-01, creationDate: "2026-01-10T00:00:00Z", tags: {team: ml, karpenter.sh/discovery: demo}}
- {id: ami-00000000000000a02, name: team-al2023-2026-02, architecture: arm64, creationDate: "2026-02-10T00:00:00Z", tags: {team: ml}}
- {id: ami-00000000000000a03, name: team-al2023-2025-06, creationDate: "2025-06-01T00:00:00Z", deprecationTime: "2026-01-01T00:00:00Z", tags: {team: ml}}
- {id: ami-00000000000000a04, name: team-pending, state: pending, tags: {team: ml}}
- {id: ami-00000000000000b01, name: partner-image-1, ownerId: "210987654321", creationDate: "2025-01-01T00:00:00Z", deprecationTime: "2026-02-01T00:00:00Z"}
- {id: ami-00000000000000b02, name: partner-image-2, ownerId: "210987654321", description: a partner's image}
`

var imagesNow = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func imageIDs(images []ec2types.Image) []string {
	var ids []string
	for _, i := range images {
		ids = append(ids, sdkaws.ToString(i.ImageId))
	}
	slices.Sort(ids)
	return ids
}

func ssmValue(t *testing.T, client *ssm.Client, name string) string {
	t.Helper()
	out, err := client.GetParameter(context.Background(), &ssm.GetParameterInput{Name: sdkaws.String(name)})
	if err != nil {
		t.Fatalf("GetParameter %s: %v", name, err)
	}
	return sdkaws.ToString(out.Parameter.Value)
}

// TestDescribeImagesSelectsAsAMISelectorTermsDo: the queries an EC2NodeClass's
// amiSelectorTerms become — by id, by name (wildcards) and owner, by tags — answer as EC2
// does, deprecated images included only when asked for (or by id, or one's own).
func TestDescribeImagesSelectsAsAMISelectorTermsDo(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{Clock: clocktesting.NewFakeClock(imagesNow)}, imagesSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	al2023Latest := ssmValue(t, ssm.NewFromConfig(cfg), "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
	al2023Pinned := ssmValue(t, ssm.NewFromConfig(cfg), "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20260415/image_id")
	available := filter("state", "available")

	for _, tt := range []struct {
		name     string
		in       ec2.DescribeImagesInput
		want     []string
		wantCode string
	}{
		{name: "by id", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000a02", "ami-00000000000000a01"}}, want: []string{"ami-00000000000000a01", "ami-00000000000000a02"}},
		{name: "by id, a deprecated image is shown", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000b01"}}, want: []string{"ami-00000000000000b01"}},
		{name: "by id, one does not exist", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000a01", "ami-00000000000000dea"}}, wantCode: "InvalidAMIID.NotFound"},
		{name: "by id, malformed", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-1"}}, wantCode: "InvalidAMIID.Malformed"},
		{name: "by image-id filter, one does not exist", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", "ami-00000000000000a01", "ami-00000000000000dea")}}, want: []string{"ami-00000000000000a01"}},
		{name: "name and the default owners self, amazon", in: ec2.DescribeImagesInput{Owners: []string{"self", "amazon"}, Filters: []ec2types.Filter{filter("name", "team-al2023-2026-01")}}, want: []string{"ami-00000000000000a01"}},
		{name: "name with *: one's own deprecated images are shown", in: ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{filter("name", "team-al2023-*")}}, want: []string{"ami-00000000000000a01", "ami-00000000000000a02", "ami-00000000000000a03"}},
		{name: "name with ?", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "team-al2023-2026-0?")}}, want: []string{"ami-00000000000000a01", "ami-00000000000000a02"}},
		{name: "another account's: deprecated ones hidden", in: ec2.DescribeImagesInput{Owners: []string{"210987654321"}}, want: []string{"ami-00000000000000b02"}},
		{name: "another account's, deprecated included", in: ec2.DescribeImagesInput{Owners: []string{"210987654321"}, IncludeDeprecated: sdkaws.Bool(true)}, want: []string{"ami-00000000000000b01", "ami-00000000000000b02"}},
		{name: "the partner's name without its owner: self and amazon have none", in: ec2.DescribeImagesInput{Owners: []string{"self", "amazon"}, Filters: []ec2types.Filter{filter("name", "partner-*")}}},
		{name: "amazon's EKS AMIs by name", in: ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-x86_64-standard-1.34-*")}}, want: sorted(al2023Latest, al2023Pinned)},
		{name: "tags", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag:team", "ml")}}, want: []string{"ami-00000000000000a01", "ami-00000000000000a02", "ami-00000000000000a03", "ami-00000000000000a04"}},
		{name: "tags and state available", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag:team", "ml"), available}}, want: []string{"ami-00000000000000a01", "ami-00000000000000a02", "ami-00000000000000a03"}},
		{name: "tag-key", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag-key", "karpenter.sh/discovery")}}, want: []string{"ami-00000000000000a01"}},
		{name: "architecture", in: ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{filter("architecture", "arm64")}}, want: []string{"ami-00000000000000a02"}},
		{name: "owner-id filter", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("owner-id", "210987654321")}}, want: []string{"ami-00000000000000b02"}},
		{
			name: "upstream's query: name, owners, state available, deprecated included, pages of 1000",
			in: ec2.DescribeImagesInput{Owners: []string{"self", "amazon"}, Filters: []ec2types.Filter{filter("name", "team-*"), available},
				IncludeDeprecated: sdkaws.Bool(true), MaxResults: sdkaws.Int32(1000)},
			want: []string{"ami-00000000000000a01", "ami-00000000000000a02", "ami-00000000000000a03"},
		},
		{name: "an owner that is neither an alias nor an account", in: ec2.DescribeImagesInput{Owners: []string{"someone"}}, wantCode: "InvalidUserID.Malformed"},
		{name: "ids with MaxResults", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000a01"}, MaxResults: sdkaws.Int32(5)}, wantCode: "InvalidParameterCombination"},
		{name: "a filter EC2 does not know", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("flavour", "vanilla")}}, wantCode: "InvalidParameterValue"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := client.DescribeImages(ctx, &tt.in)
			if code := errorCode(err); code != tt.wantCode {
				t.Fatalf("error code = %q (%v), want %q", code, err, tt.wantCode)
			}
			if err != nil {
				return
			}
			if got := imageIDs(out.Images); !slices.Equal(got, tt.want) {
				t.Errorf("images = %v, want %v", got, tt.want)
			}
		})
	}
}

func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// TestDescribeImagesReportsWhatAMISelectionReads: architecture, creation date, deprecation,
// state, owner and tags, for one's own images and Amazon's.
func TestDescribeImagesReportsWhatAMISelectionReads(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{Clock: clocktesting.NewFakeClock(imagesNow)}, imagesSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	windows := ssmValue(t, ssm.NewFromConfig(cfg), "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.34/image_id")
	out, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000a02", "ami-00000000000000a03", "ami-00000000000000a04", "ami-0123456789abcdef0", windows}})
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		name, arch, created, deprecated, state, owner, alias, platform string
		public                                                         bool
		tags                                                           int
	}
	got := map[string]view{}
	for _, i := range out.Images {
		got[sdkaws.ToString(i.ImageId)] = view{
			name: sdkaws.ToString(i.Name), arch: string(i.Architecture), created: sdkaws.ToString(i.CreationDate), deprecated: sdkaws.ToString(i.DeprecationTime),
			state: string(i.State), owner: sdkaws.ToString(i.OwnerId), alias: sdkaws.ToString(i.ImageOwnerAlias), platform: string(i.Platform),
			public: sdkaws.ToBool(i.Public), tags: len(i.Tags),
		}
	}
	for id, want := range map[string]view{
		"ami-00000000000000a02": {name: "team-al2023-2026-02", arch: "arm64", created: "2026-02-10T00:00:00.000Z", state: "available", owner: "123456789012", tags: 1},
		"ami-00000000000000a03": {name: "team-al2023-2025-06", arch: "x86_64", created: "2025-06-01T00:00:00.000Z", deprecated: "2026-01-01T00:00:00.000Z", state: "available", owner: "123456789012", tags: 1},
		"ami-00000000000000a04": {name: "team-pending", arch: "x86_64", created: "2026-03-01T00:00:00.000Z", state: "pending", owner: "123456789012", tags: 1},
		// A bare id: the account's own x86_64 image, named by its id, made when the emulator started.
		"ami-0123456789abcdef0": {name: "ami-0123456789abcdef0", arch: "x86_64", created: "2026-03-01T00:00:00.000Z", state: "available", owner: "123456789012"},
		// Amazon's public AMIs are deprecated two years after their creation, as EC2 does by default.
		windows: {name: "Windows_Server-2022-English-Core-EKS_Optimized-1.34-2026.05.14", arch: "x86_64", created: "2026-05-14T00:00:00.000Z", deprecated: "2028-05-14T00:00:00.000Z",
			state: "available", owner: got[windows].owner, alias: "amazon", platform: "windows", public: true},
	} {
		if got[id] != want {
			t.Errorf("%s = %+v, want %+v", id, got[id], want)
		}
	}
	if got[windows].owner == "" || got[windows].owner == "123456789012" {
		t.Errorf("Amazon's image is owned by %q", got[windows].owner)
	}

	// Tags an account puts on an image (its own or a public one) are what tag filters see.
	if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{windows}, Tags: []ec2types.Tag{{Key: sdkaws.String("team"), Value: sdkaws.String("windows")}}}); err != nil {
		t.Fatal(err)
	}
	tagged, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag:team", "windows")}})
	if err != nil || !slices.Equal(imageIDs(tagged.Images), []string{windows}) {
		t.Errorf("tagged image = %+v, %v", tagged, err)
	}
}

// TestDescribeImagesPaginates: MaxResults pages through every image in order, without overlap.
func TestDescribeImagesPaginates(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, imagesSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	all, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(all.Images) < 50 || all.NextToken != nil {
		t.Fatalf("all of Amazon's images in one answer = %d, next %v, %v", len(all.Images), all.NextToken, err)
	}
	var paged []string
	pages := 0
	for p := ec2.NewDescribeImagesPaginator(client, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, MaxResults: sdkaws.Int32(7)}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, i := range out.Images {
			paged = append(paged, sdkaws.ToString(i.ImageId))
		}
	}
	if !slices.Equal(paged, imageIDs(all.Images)) || pages != (len(all.Images)+6)/7 {
		t.Errorf("%d images over %d pages, want %d over %d", len(paged), pages, len(all.Images), (len(all.Images)+6)/7)
	}
	for _, bad := range []int32{4, 1001} {
		_, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{MaxResults: sdkaws.Int32(bad)})
		if code := errorCode(err); code != "InvalidParameterValue" {
			t.Errorf("MaxResults %d: code %q (%v)", bad, code, err)
		}
	}
}

// TestSSMPublishesTheAMIAliasParameters: the public parameters each EC2NodeClass alias
// (family@version) reads, as upstream names them per family, architecture, variant and
// version, resolve to Amazon images that exist, named as AWS names them; `latest` (or
// recommended) is the newest release; versions AWS does not publish are not found.
func TestSSMPublishesTheAMIAliasParameters(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, "")
	ssmClient, ec2Client := ssm.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	ctx := context.Background()
	const eks = "/aws/service/eks/optimized-ami/"
	for _, tt := range []struct {
		alias, parameter, wantName, wantArch, wantPlatform string
	}{
		{"al2023@latest", eks + "1.34/amazon-linux-2023/x86_64/standard/recommended/image_id", "amazon-eks-node-al2023-x86_64-standard-1.34-v20260520", "x86_64", ""},
		{"al2023@latest", eks + "1.34/amazon-linux-2023/arm64/standard/recommended/image_id", "amazon-eks-node-al2023-arm64-standard-1.34-v20260520", "arm64", ""},
		{"al2023@latest", eks + "1.34/amazon-linux-2023/x86_64/nvidia/recommended/image_id", "amazon-eks-node-al2023-x86_64-nvidia-1.34-v20260520", "x86_64", ""},
		{"al2023@latest", eks + "1.34/amazon-linux-2023/arm64/nvidia/recommended/image_id", "amazon-eks-node-al2023-arm64-nvidia-1.34-v20260520", "arm64", ""},
		{"al2023@latest", eks + "1.34/amazon-linux-2023/x86_64/neuron/recommended/image_id", "amazon-eks-node-al2023-x86_64-neuron-1.34-v20260520", "x86_64", ""},
		{"al2023@v20260415", eks + "1.34/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.34-v20260415/image_id", "amazon-eks-node-al2023-arm64-nvidia-1.34-v20260415", "arm64", ""},
		{"al2023@v20260520", eks + "1.35/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.35-v20260520/image_id", "amazon-eks-node-al2023-x86_64-standard-1.35-v20260520", "x86_64", ""},
		{"al2@latest", eks + "1.32/amazon-linux-2/recommended/image_id", "amazon-eks-node-1.32-v20260520", "x86_64", ""},
		{"al2@latest", eks + "1.32/amazon-linux-2-gpu/recommended/image_id", "amazon-eks-gpu-node-1.32-v20260520", "x86_64", ""},
		{"al2@v20260415", eks + "1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20260415/image_id", "amazon-eks-arm64-node-1.32-v20260415", "arm64", ""},
		{"al2@v20260415", eks + "1.31/amazon-linux-2/amazon-eks-node-1.31-v20260415/image_id", "amazon-eks-node-1.31-v20260415", "x86_64", ""},
		{"bottlerocket@latest", "/aws/service/bottlerocket/aws-k8s-1.34/x86_64/latest/image_id", "bottlerocket-aws-k8s-1.34-x86_64-v1.58.0-", "x86_64", ""},
		{"bottlerocket@latest", "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/latest/image_id", "bottlerocket-aws-k8s-1.34-nvidia-arm64-v1.58.0-", "arm64", ""},
		{"bottlerocket@v1.57.0", "/aws/service/bottlerocket/aws-k8s-1.34/arm64/1.57.0/image_id", "bottlerocket-aws-k8s-1.34-arm64-v1.57.0-", "arm64", ""},
		{"bottlerocket@1.57.0", "/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/1.57.0/image_id", "bottlerocket-aws-k8s-1.30-nvidia-x86_64-v1.57.0-", "x86_64", ""},
		{"windows2019@latest", "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.34/image_id", "Windows_Server-2019-English-Core-EKS_Optimized-1.34-2026.05.14", "x86_64", "windows"},
		{"windows2022@latest", "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.34/image_id", "Windows_Server-2022-English-Core-EKS_Optimized-1.34-2026.05.14", "x86_64", "windows"},
		{"windows2025@latest", "/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id", "Windows_Server-2025-English-Core-EKS_Optimized-1.35-2026.05.14", "x86_64", "windows"},
	} {
		t.Run(tt.alias+" "+tt.parameter, func(t *testing.T) {
			id := ssmValue(t, ssmClient, tt.parameter)
			out, err := ec2Client.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
			if err != nil || len(out.Images) != 1 {
				t.Fatalf("DescribeImages %s = %+v, %v", id, out, err)
			}
			i := out.Images[0]
			if !strings.HasPrefix(sdkaws.ToString(i.Name), tt.wantName) || string(i.Architecture) != tt.wantArch || string(i.Platform) != tt.wantPlatform ||
				sdkaws.ToString(i.ImageOwnerAlias) != "amazon" || i.State != ec2types.ImageStateAvailable {
				t.Errorf("%s = name %q, arch %s, platform %q, owner %q, state %s; want %s…, %s, %q, amazon, available",
					id, sdkaws.ToString(i.Name), i.Architecture, i.Platform, sdkaws.ToString(i.ImageOwnerAlias), i.State, tt.wantName, tt.wantArch, tt.wantPlatform)
			}
		})
	}

	// latest and recommended are the newest release's own parameter.
	for latest, pinned := range map[string]string{
		eks + "1.33/amazon-linux-2023/arm64/standard/recommended/image_id": eks + "1.33/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.33-v20260520/image_id",
		eks + "1.30/amazon-linux-2-arm64/recommended/image_id":             eks + "1.30/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20260520/image_id",
		"/aws/service/bottlerocket/aws-k8s-1.33/x86_64/latest/image_id":    "/aws/service/bottlerocket/aws-k8s-1.33/x86_64/1.58.0/image_id",
	} {
		if a, b := ssmValue(t, ssmClient, latest), ssmValue(t, ssmClient, pinned); a != b {
			t.Errorf("%s = %s, but the newest release %s = %s", latest, a, pinned, b)
		}
	}

	// What AWS does not publish: AL2 after 1.32, Windows Server 2025 before 1.35, releases that
	// never were, Bottlerocket versions written with their GitHub "v" (upstream trims it).
	for _, name := range []string{
		eks + "1.33/amazon-linux-2/recommended/image_id",
		eks + "1.33/amazon-linux-2/amazon-eks-node-1.33-v20260520/image_id",
		"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.34/image_id",
		eks + "1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20200101/image_id",
		eks + "1.34/amazon-linux-2023/arm64/neuron/recommended/image_id",
		"/aws/service/bottlerocket/aws-k8s-1.34/x86_64/v1.58.0/image_id",
		"/aws/service/bottlerocket/aws-k8s-1.29/x86_64/latest/image_id",
	} {
		_, err := ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(name)})
		var notFound *ssmtypes.ParameterNotFound
		if !errors.As(err, &notFound) {
			t.Errorf("%s: %v, want ParameterNotFound", name, err)
		}
	}
}

// TestCreateFleetLaunchesOnlyAvailableImages: an image that exists but is not available (still
// pending) cannot be launched; one's own, Amazon's and a deprecated image can.
func TestCreateFleetLaunchesOnlyAvailableImages(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{Clock: clocktesting.NewFakeClock(imagesNow)}, imagesSeed)
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	bottlerocket := ssmValue(t, ssm.NewFromConfig(cfg), "/aws/service/bottlerocket/aws-k8s-1.34/x86_64/latest/image_id")
	for image, wantCode := range map[string]string{
		"ami-00000000000000a04": "InvalidAMIID.Unavailable",
		"ami-00000000000000a01": "",
		"ami-00000000000000a03": "",
		bottlerocket:            "",
	} {
		name := "nodes-" + image
		if _, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: sdkaws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: sdkaws.String(image), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("KarpenterNodeInstanceProfile")},
		}}); err != nil {
			t.Fatal(err)
		}
		in := fleetInput("", "on-demand", 1, "m5.large")
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = sdkaws.String(name)
		out, err := client.CreateFleet(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var code string
		if len(out.Errors) > 0 {
			code = sdkaws.ToString(out.Errors[0].ErrorCode)
		}
		if code != wantCode || (wantCode == "") != (len(launched(out)) == 1) {
			t.Errorf("launching from %s: %d launched, error %q (%+v), want %q", image, len(launched(out)), code, out.Errors, wantCode)
		}
	}
}
