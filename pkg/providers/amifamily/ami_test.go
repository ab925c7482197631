package amifamily_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

func newProvider(t *testing.T, kubernetesVersion, seed string) (*awsemulator.Emulator, *clocktesting.FakeClock, *amifamily.Provider) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, seed)
	return emulator, clk, amifamily.NewProvider(awstest.Clients(t, server.URL, clk), kubernetesVersion, clk)
}

// The recommended AMI is the SSM parameter EKS publishes for the version and architecture, kept
// for an hour.
func TestRecommendedAMIIsEKSsParameterKeptForAnHour(t *testing.T) {
	emulator, clk, amis := newProvider(t, "1.34", `
ssmParameters:
  /aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id: ami-amd64
  /aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id: ami-arm64
`)
	ctx := context.Background()
	for arch, want := range map[string]string{"amd64": "ami-amd64", "arm64": "ami-arm64"} {
		if got, err := amis.Recommended(ctx, arch); err != nil || got != want {
			t.Errorf("Recommended(%s) = %q, %v; want %s", arch, got, err, want)
		}
	}
	if _, err := emulator.InjectFault(awsemulator.Fault{Service: "ssm", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	if got, err := amis.Recommended(ctx, "amd64"); err != nil || got != "ami-amd64" {
		t.Errorf("Recommended within the hour = %q, %v; want the kept ami-amd64", got, err)
	}
	clk.Step(time.Hour + time.Second)
	var denied *cloudprovider.AccessDeniedError
	if _, err := amis.Recommended(ctx, "amd64"); !errors.As(err, &denied) || denied.Action != "ssm:GetParameter" {
		t.Errorf("Recommended after the hour = %v, want access denied naming ssm:GetParameter", err)
	}
}

// A version EKS publishes no AMI for is the user's to fix.
func TestNoRecommendedAMIForTheVersionIsActionRequired(t *testing.T) {
	_, _, amis := newProvider(t, "1.99", "")
	var required *cloudprovider.ActionRequiredError
	if _, err := amis.Recommended(context.Background(), "amd64"); !errors.As(err, &required) || required.Reason != cloudprovider.ReasonInvalidAMI {
		t.Errorf("Recommended = %v, want action required: %s", err, cloudprovider.ReasonInvalidAMI)
	}
	if _, err := amis.Recommended(context.Background(), "s390x"); err == nil {
		t.Error("Recommended for an architecture EKS has no AMI for = no error")
	}
}

const images = `
images:
- {id: ami-0aaaaaaaaaaaaaaa1, name: team-node-v1, architecture: arm64, creationDate: "2026-01-01T00:00:00Z", tags: {team: ml}}
- {id: ami-0aaaaaaaaaaaaaaa2, name: team-node-v2, creationDate: "2026-02-01T00:00:00Z", tags: {team: ml}}
- {id: ami-0bbbbbbbbbbbbbbb1, name: other-node, creationDate: "2026-03-01T00:00:00Z"}
`

func amiIDs(amis []amifamily.AMI) []string {
	var out []string
	for _, a := range amis {
		out = append(out, a.ID)
	}
	return out
}

// AMIs are selected by tags, id or name (EC2's wildcards) and owner, terms ORed, newest first.
func TestAMIsAreSelectedByTermsNewestFirst(t *testing.T) {
	_, _, amis := newProvider(t, "1.34", images)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		terms []selector.Term
		want  []string
	}{
		{"by tag", []selector.Term{{Tags: map[string]string{"team": "ml"}}}, []string{"ami-0aaaaaaaaaaaaaaa2", "ami-0aaaaaaaaaaaaaaa1"}},
		{"by name with a wildcard", []selector.Term{{Name: "team-node-*"}}, []string{"ami-0aaaaaaaaaaaaaaa2", "ami-0aaaaaaaaaaaaaaa1"}},
		{"by id", []selector.Term{{ID: "ami-0bbbbbbbbbbbbbbb1"}}, []string{"ami-0bbbbbbbbbbbbbbb1"}},
		{"terms ORed, once each", []selector.Term{{ID: "ami-0aaaaaaaaaaaaaaa1"}, {Name: "other-node"}, {Tags: map[string]string{"team": "ml"}}},
			[]string{"ami-0bbbbbbbbbbbbbbb1", "ami-0aaaaaaaaaaaaaaa2", "ami-0aaaaaaaaaaaaaaa1"}},
		{"by name, the account's", []selector.Term{{Name: "team-node-*", Owner: "self"}}, []string{"ami-0aaaaaaaaaaaaaaa2", "ami-0aaaaaaaaaaaaaaa1"}},
		{"by name, Amazon's only", []selector.Term{{Name: "team-node-*", Owner: "amazon"}}, nil},
		{"none", []selector.Term{{Name: "missing-*"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := amis.List(ctx, tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, amiIDs(got)); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
	got, err := amis.List(ctx, []selector.Term{{ID: "ami-0aaaaaaaaaaaaaaa1"}})
	if err != nil || len(got) != 1 || got[0] != (amifamily.AMI{ID: "ami-0aaaaaaaaaaaaaaa1", Name: "team-node-v1", Architecture: "arm64", CreationDate: "2026-01-01T00:00:00.000Z"}) {
		t.Errorf("List by id = %+v, %v", got, err)
	}
	// Amazon's EKS-optimized AMIs are selected by name too.
	eks, err := amis.List(ctx, []selector.Term{{Name: "amazon-eks-node-al2023-*-standard-1.34-v20260520"}})
	if err != nil || len(eks) != 2 || eks[0].Architecture == eks[1].Architecture {
		t.Errorf("List of the EKS-optimized AL2023 AMIs of 1.34 = %+v, %v; want the amd64 and the arm64 one", eks, err)
	}
}

// A selection is kept for a minute.
func TestAMISelectionsAreKeptForAMinute(t *testing.T) {
	emulator, clk, amis := newProvider(t, "1.34", images)
	ctx := context.Background()
	team := []selector.Term{{Tags: map[string]string{"team": "ml"}}}
	if _, err := amis.List(ctx, team); err != nil {
		t.Fatal(err)
	}
	if _, err := emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeImages", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	if got, err := amis.List(ctx, team); err != nil || len(got) != 2 {
		t.Errorf("List within the minute = %v, %v; want the kept two", amiIDs(got), err)
	}
	clk.Step(time.Minute + time.Second)
	var denied *cloudprovider.AccessDeniedError
	if _, err := amis.List(ctx, team); !errors.As(err, &denied) || denied.Action != "ec2:DescribeImages" {
		t.Errorf("List after the minute = %v, want access denied naming ec2:DescribeImages", err)
	}
}
