package instanceprofile_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/instanceprofile"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// TestInstanceProfileHoldsTheRoleUntilDeleted against the emulator's IAM: Ensure creates the
// profile with its role, is idempotent, replaces the role when it changes, refuses a missing
// role, adds tags the class gained; Delete removes the role and the profile, and again is not an error.
func TestInstanceProfileHoldsTheRoleUntilDeleted(t *testing.T) {
	_, server := awstest.Serve(t, awsemulator.Options{}, `
iamRoles:
- {name: nodes}
- {name: gpu-nodes}
`)
	profiles := instanceprofile.NewProvider(awstest.Clients(t, server.URL, clock.RealClock{}))
	ctx := context.Background()
	name := instanceprofile.Name("sandbox", "us-west-2", "default")
	if name != instanceprofile.Name("sandbox", "us-west-2", "default") || name == instanceprofile.Name("sandbox", "us-east-1", "default") {
		t.Errorf("name %q is not one per cluster, region and class", name)
	}
	tags := map[string]string{"kubernetes.io/cluster/sandbox": "owned"}
	for _, role := range []string{"nodes", "nodes", "gpu-nodes"} {
		if err := profiles.Ensure(ctx, name, role, tags); err != nil {
			t.Fatalf("Ensure(%s) = %v", role, err)
		}
		if got, err := profiles.Get(ctx, name); err != nil || got.Role != role {
			t.Errorf("after Ensure(%s): %+v, %v", role, got, err)
		}
	}
	tags["team"] = "platform"
	if err := profiles.Ensure(ctx, name, "gpu-nodes", tags); err != nil {
		t.Fatal(err)
	}
	if got, err := profiles.Get(ctx, name); err != nil || got.Tags["team"] != "platform" || got.Tags["kubernetes.io/cluster/sandbox"] != "owned" {
		t.Errorf("after a tag was added: %+v, %v; want it on the profile", got, err)
	}
	var notFound *cloudprovider.NotFoundError
	if err := profiles.Ensure(ctx, name, "missing", tags); !errors.As(err, &notFound) {
		t.Errorf("Ensure with a missing role = %v, want not found", err)
	}
	for range 2 {
		if err := profiles.Delete(ctx, name); err != nil {
			t.Fatalf("Delete = %v", err)
		}
	}
	if _, err := profiles.Get(ctx, name); !errors.As(err, &notFound) {
		t.Errorf("Get after Delete = %v, want not found", err)
	}
}
