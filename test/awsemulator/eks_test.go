package awsemulator_test

import (
	"context"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"karpenter.sh/karpenter/test/awsemulator"
)

func TestEKSDescribeCluster(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, `eksClusters: [{name: seeded, version: "1.33", serviceIpv4Cidr: 172.20.0.0/16}]`)
	client := eks.NewFromConfig(cfg)
	for _, tt := range []struct {
		name, version, cidr string
	}{
		{"seeded", "1.33", "172.20.0.0/16"},
		// Any other cluster is there, with the defaults, so that a controller needs no seed.
		{"demo", "1.34", "10.100.0.0/16"},
	} {
		out, err := client.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: sdkaws.String(tt.name)})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		c := out.Cluster
		if sdkaws.ToString(c.Name) != tt.name || sdkaws.ToString(c.Version) != tt.version || c.Status != ekstypes.ClusterStatusActive ||
			c.KubernetesNetworkConfig == nil || sdkaws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr) != tt.cidr ||
			c.KubernetesNetworkConfig.IpFamily != ekstypes.IpFamilyIpv4 ||
			sdkaws.ToString(c.Arn) != "arn:aws:eks:us-west-2:123456789012:cluster/"+tt.name || sdkaws.ToString(c.Endpoint) == "" {
			t.Errorf("%s: DescribeCluster = %+v (network %+v)", tt.name, c, c.KubernetesNetworkConfig)
		}
	}
}

func TestEKSClusterSeedIsValidated(t *testing.T) {
	e := awsemulator.New(awsemulator.Options{})
	for _, seed := range []string{
		`eksClusters: [{version: "1.34"}]`,
		`eksClusters: [{name: c, serviceIpv4Cidr: not-a-cidr}]`,
		`eksClusters: [{name: c}, {name: c}]`,
	} {
		s, err := awsemulator.ParseSeed([]byte(seed))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Seed(s); err == nil {
			t.Errorf("seed %s was accepted", seed)
		}
	}
}
