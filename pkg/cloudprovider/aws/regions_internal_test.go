package aws

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// Ids name their region, so any user can make the provider build clients for any string; the
// provider keeps only the most recently used maxRegions of them.
func TestRegionClientsAreBounded(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	p, err := New(context.Background(), Options{Region: "us-west-2"},
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	clientsOf := func(region string) *awsapi.Clients {
		t.Helper()
		c, err := p.clientsFor(region)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	home := clientsOf("")
	first := clientsOf("eu-west-1")
	for i := range 10 * maxRegions {
		clientsOf(fmt.Sprintf("region-%d", i))
		// The default region is in use all along, so it is never the one evicted.
		if clientsOf("us-west-2") != home {
			t.Fatalf("after %d regions the default region's clients were rebuilt", i+1)
		}
		if len(p.regions) > maxRegions {
			t.Fatalf("after %d regions the provider keeps clients for %d, want at most %d", i+1, len(p.regions), maxRegions)
		}
	}
	if _, kept := p.regions["eu-west-1"]; kept {
		t.Error("eu-west-1, unused since the start, was kept")
	}
	if again := clientsOf("eu-west-1"); again == first || again == nil {
		t.Error("eu-west-1's clients were not rebuilt on its next use")
	}
}
