package securitygroup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/securitygroup"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const seed = `
securityGroups:
- {id: sg-nodes, name: demo-nodes, tags: {kubernetes.io/cluster/demo: owned}}
- {id: sg-extra, name: demo-extra, tags: {kubernetes.io/cluster/demo: shared, team: a}}
- {id: sg-other, name: other, tags: {kubernetes.io/cluster/other: owned}}
`

func newProvider(t *testing.T) (*awsemulator.Emulator, *clocktesting.FakeClock, *securitygroup.Provider) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, seed)
	return emulator, clk, securitygroup.NewProvider(awstest.Clients(t, server.URL, clk), clk)
}

// Terms are ORed, each term's fields ANDed; a group two terms select is listed once.
func TestSecurityGroupsAreSelectedByTerms(t *testing.T) {
	_, _, groups := newProvider(t)
	for _, tc := range []struct {
		name  string
		terms []selector.Term
		want  []string
	}{
		{"the cluster's tag, any value", []selector.Term{{Tags: map[string]string{"kubernetes.io/cluster/demo": selector.AnyValue}}}, []string{"sg-extra", "sg-nodes"}},
		{"tags ANDed", []selector.Term{{Tags: map[string]string{"kubernetes.io/cluster/demo": selector.AnyValue, "team": "a"}}}, []string{"sg-extra"}},
		{"by id", []selector.Term{{ID: "sg-other"}}, []string{"sg-other"}},
		{"by name", []selector.Term{{Name: "demo-nodes"}}, []string{"sg-nodes"}},
		{"terms ORed, once each", []selector.Term{{Name: "demo-nodes"}, {ID: "sg-nodes"}, {Tags: map[string]string{"team": "a"}}}, []string{"sg-extra", "sg-nodes"}},
		{"none", []selector.Term{{Tags: map[string]string{"team": "b"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := groups.List(context.Background(), tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, securitygroup.IDs(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
}

// A selection is kept for a minute.
func TestSecurityGroupSelectionsAreKeptForAMinute(t *testing.T) {
	emulator, clk, groups := newProvider(t)
	ctx := context.Background()
	nodes := []selector.Term{{Name: "demo-nodes"}}
	if _, err := groups.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if _, err := emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSecurityGroups", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	if got, err := groups.List(ctx, nodes); err != nil || len(got) != 1 || got[0] != (securitygroup.SecurityGroup{ID: "sg-nodes", Name: "demo-nodes"}) {
		t.Errorf("List within the minute = %v, %v; want the kept sg-nodes", got, err)
	}
	clk.Step(time.Minute + time.Second)
	var denied *cloudprovider.AccessDeniedError
	if _, err := groups.List(ctx, nodes); !errors.As(err, &denied) || denied.Action != "ec2:DescribeSecurityGroups" {
		t.Errorf("List after the minute = %v, want access denied naming ec2:DescribeSecurityGroups", err)
	}
}
