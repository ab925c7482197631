// Package awstest serves the project's AWS emulator (test/awsemulator) to tests.
package awstest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/test/awsemulator"
)

// Serve serves a new emulator with opts, seeded from seedYAML (nothing when empty), on a
// loopback HTTP server that closes when the test ends.
func Serve(t testing.TB, opts awsemulator.Options, seedYAML string) (*awsemulator.Emulator, *httptest.Server) {
	t.Helper()
	emulator := awsemulator.New(opts)
	if seedYAML != "" {
		seed, err := awsemulator.ParseSeed([]byte(seedYAML))
		if err != nil {
			t.Fatal(err)
		}
		if err := emulator.Seed(seed); err != nil {
			t.Fatal(err)
		}
	}
	server := httptest.NewServer(emulator)
	t.Cleanup(server.Close)
	return emulator, server
}

// Region is the region of the clients Clients builds, the emulator's default.
const Region = "us-west-2"

// Clients are the SDK clients of Region, built as the controller builds them (aws.New), that
// call the emulator served at url with test credentials, retrying quickly. The host's AWS
// settings (profile, region, endpoints) are hidden for the test.
func Clients(t testing.TB, url string, clk clock.PassiveClock) awsapi.ClientsFunc {
	t.Helper()
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_SSM",
		"AWS_ENDPOINT_URL_PRICING", "AWS_ENDPOINT_URL_EKS", "AWS_ENDPOINT_URL_IAM"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	provider, err := aws.New(context.Background(), aws.Options{Region: Region, MaxBackoff: 5 * time.Millisecond, Clock: clk},
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return provider.DefaultRegionClients
}
