package launchtemplate_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/securitygroup"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const seed = `
securityGroups:
- {id: sg-nodes, name: demo-nodes, tags: {kubernetes.io/cluster/demo: owned}}
instanceProfiles: [KarpenterNodeInstanceProfile-demo]
eksClusters:
- {name: demo, serviceIpv4Cidr: 10.100.0.0/16}
`

func newProvider(t *testing.T) (*awsemulator.Emulator, *launchtemplate.Provider) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, seed)
	clients := awstest.Clients(t, server.URL, clk)
	return emulator, launchtemplate.NewProvider(clients, launchtemplate.Options{ClusterName: "demo", ClusterEndpoint: "https://demo.example"},
		amifamily.NewProvider(clients, "1.34", clk), securitygroup.NewProvider(clients, clk), clk)
}

func instanceType(name, arch string, pods int64) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:     name,
		Labels:   map[string]string{corev1.LabelArchStable: arch},
		Capacity: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)},
	}
}

func request(it *cloudprovider.InstanceType, labels map[string]string) launchtemplate.Request {
	return launchtemplate.Request{
		SecurityGroups:  []selector.Term{{Tags: map[string]string{"kubernetes.io/cluster/demo": selector.AnyValue}}},
		InstanceProfile: "KarpenterNodeInstanceProfile-demo",
		Labels:          labels,
		InstanceType:    it,
	}
}

// Nodes that boot the same AMI with the same user data share a template; an architecture, a
// max-pods figure or labels of their own make another. Each is tagged as the cluster's and
// holds the security groups, the instance profile and IMDSv2 only.
func TestOneTemplatePerDistinctNodes(t *testing.T) {
	emulator, templates := newProvider(t)
	ctx := context.Background()
	team := map[string]string{"team": "ml"}
	names := map[string]bool{}
	for _, r := range []launchtemplate.Request{
		request(instanceType("m5.large", "amd64", 29), team),
		request(instanceType("c5.large", "amd64", 29), team),
		request(instanceType("m6g.large", "arm64", 29), team),
		request(instanceType("m5.xlarge", "amd64", 58), team),
		request(instanceType("m5.large", "amd64", 29), map[string]string{"team": "web"}),
	} {
		name, err := templates.Resolve(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		names[name] = true
	}
	made := emulator.LaunchTemplates()
	if len(names) != 4 || len(made) != 4 {
		t.Fatalf("resolved %d names and made %d templates, want 4 of each (m5.large and c5.large share one)", len(names), len(made))
	}
	for _, lt := range made {
		if !names[lt.LaunchTemplateName] || lt.Tags["kubernetes.io/cluster/demo"] != "owned" {
			t.Errorf("template %s (tags %v) is not one resolved, tagged as the cluster's", lt.LaunchTemplateName, lt.Tags)
		}
		if !slices.Equal(lt.Data.SecurityGroupIDs, []string{"sg-nodes"}) || lt.Data.IAMInstanceProfileName != "KarpenterNodeInstanceProfile-demo" || lt.Data.ImageID == "" {
			t.Errorf("template %s holds %+v", lt.LaunchTemplateName, lt.Data)
		}
	}
}

// Terms that select no security group are the caller's to name: it knows which field they come
// from.
func TestNoSecurityGroupIsTheCallersToName(t *testing.T) {
	_, templates := newProvider(t)
	r := request(instanceType("m5.large", "amd64", 29), nil)
	r.SecurityGroups = []selector.Term{{Name: "missing"}}
	var none *launchtemplate.NoSecurityGroupError
	if _, err := templates.Resolve(context.Background(), r); !errors.As(err, &none) || selector.Key(none.Terms) != selector.Key(r.SecurityGroups) {
		t.Errorf("Resolve = %v, want a NoSecurityGroupError naming the terms", err)
	}
}
