package sandbox

import (
	"context"
	"slices"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// TestSeedIsWhatTheGettingStartedGuidesLeave: the sandbox's emulated account holds what
// Karpenter's getting-started guides create — v0.5's subnets and node security group tagged
// kubernetes.io/cluster/<cluster> and its KarpenterNodeInstanceProfile-<cluster> holding
// KarpenterNodeRole-<cluster>; v1's karpenter.sh/discovery: <cluster> tags and that node role —
// beside the KarpenterNodeInstanceProfile-demo of this project's own examples.
func TestSeedIsWhatTheGettingStartedGuidesLeave(t *testing.T) {
	_, server := awstest.Serve(t, awsemulator.Options{Region: Region}, string(Seed))
	cfg := sdkaws.Config{
		Region: Region, BaseEndpoint: sdkaws.String(server.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	ec2Client, iamClient := ec2.NewFromConfig(cfg), iam.NewFromConfig(cfg)
	ctx := context.Background()
	tagFilter := func(key, value string) []ec2types.Filter {
		return []ec2types.Filter{{Name: sdkaws.String("tag:" + key), Values: []string{value}}}
	}
	zones := []string{"us-west-2a", "us-west-2b", "us-west-2c"}

	for _, tt := range []struct {
		guide, key, value string
	}{
		{"v0.5: subnets and security groups tagged for the cluster", "kubernetes.io/cluster/sandbox", "*"},
		{"v1: subnetSelectorTerms and securityGroupSelectorTerms by discovery tag", "karpenter.sh/discovery", "sandbox"},
	} {
		t.Run(tt.guide, func(t *testing.T) {
			subnets, err := ec2Client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: tagFilter(tt.key, tt.value)})
			if err != nil {
				t.Fatal(err)
			}
			var subnetZones []string
			for _, s := range subnets.Subnets {
				subnetZones = append(subnetZones, sdkaws.ToString(s.AvailabilityZone))
				if sdkaws.ToString(s.AvailabilityZoneId) == "" {
					t.Errorf("subnet %s has no zone id", sdkaws.ToString(s.SubnetId))
				}
			}
			if slices.Sort(subnetZones); !slices.Equal(subnetZones, zones) {
				t.Errorf("subnets tagged %s=%s are in %v, want one in each of %v", tt.key, tt.value, subnetZones, zones)
			}
			groups, err := ec2Client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: tagFilter(tt.key, tt.value)})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, g := range groups.SecurityGroups {
				names = append(names, sdkaws.ToString(g.GroupName))
			}
			if !slices.Equal(names, []string{"sandbox-nodes"}) {
				t.Errorf("security groups tagged %s=%s = %v, want the nodes' one", tt.key, tt.value, names)
			}
		})
	}

	role, err := iamClient.GetRole(ctx, &iam.GetRoleInput{RoleName: sdkaws.String("KarpenterNodeRole-sandbox")})
	if err != nil {
		t.Fatalf("the v1 guide's node role (an EC2NodeClass's spec.role): %v", err)
	}
	for _, profile := range []string{"KarpenterNodeInstanceProfile-sandbox", "KarpenterNodeInstanceProfile-demo"} {
		out, err := iamClient.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
		if err != nil {
			t.Errorf("instance profile %s: %v", profile, err)
			continue
		}
		if roles := out.InstanceProfile.Roles; len(roles) != 1 || sdkaws.ToString(roles[0].Arn) != sdkaws.ToString(role.Role.Arn) {
			t.Errorf("instance profile %s holds %+v, want the node role", profile, roles)
		}
	}
}
