package nodeclass_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/nodeclass"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
)

var (
	now      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	subnets  = []awsv1.Subnet{{ID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"}}
	groups   = []awsv1.SecurityGroup{{ID: "sg-a", Name: "nodes"}}
	amis     = []awsv1.AMI{{ID: "ami-a", Name: "al2023", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
	resolved = nodeclass.Resolution{Subnets: subnets, SecurityGroups: groups, AMIs: amis, InstanceProfile: "demo_1"}
)

func class(mutate func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	c := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 3},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole-demo",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// TestDecideEC2NodeClassStatus: what each resolution makes of the class's status and
// conditions, Ready taking the reason of the first condition that is not True.
func TestDecideEC2NodeClassStatus(t *testing.T) {
	denied := &cloudprovider.AccessDeniedError{Action: "ec2:DescribeSubnets", Resource: "subnets", Err: errors.New("denied")}
	for _, tc := range []struct {
		name       string
		class      *awsv1.EC2NodeClass
		resolution nodeclass.Resolution
		// want is each condition's status and reason; wantMessage is in the named condition's
		// message.
		want        map[string]string
		wantMessage map[string]string
		check       func(*testing.T, awsv1.EC2NodeClassStatus)
	}{{
		name: "everything resolved", class: class(nil), resolution: resolved,
		want: map[string]string{"SubnetsReady": "True/Resolved", "SecurityGroupsReady": "True/Resolved", "AMIsReady": "True/Resolved", "InstanceProfileReady": "True/Resolved", "ValidationSucceeded": "True/Valid", "Ready": "True/Ready"},
		check: func(t *testing.T, s awsv1.EC2NodeClassStatus) {
			if len(s.Subnets) != 1 || s.Subnets[0].ZoneID != "usw2-az1" || len(s.SecurityGroups) != 1 || len(s.AMIs) != 1 || s.InstanceProfile != "demo_1" {
				t.Errorf("status = %+v, want the resolution", s)
			}
		},
	}, {
		name: "no subnet matches", class: class(nil), resolution: nodeclass.Resolution{SecurityGroups: groups, AMIs: amis, InstanceProfile: "demo_1"},
		want:        map[string]string{"SubnetsReady": "False/SubnetsNotFound", "Ready": "False/SubnetsNotFound"},
		wantMessage: map[string]string{"SubnetsReady": `"karpenter.sh/discovery"="demo"`, "Ready": "SubnetsReady: no subnet matches"},
	}, {
		name: "no security group matches", class: class(nil), resolution: nodeclass.Resolution{Subnets: subnets, AMIs: amis, InstanceProfile: "demo_1"},
		want: map[string]string{"SecurityGroupsReady": "False/SecurityGroupsNotFound", "Ready": "False/SecurityGroupsNotFound"},
	}, {
		name: "no AMI for the alias", class: class(nil), resolution: nodeclass.Resolution{Subnets: subnets, SecurityGroups: groups, InstanceProfile: "demo_1"},
		want:        map[string]string{"AMIsReady": "False/AMINotFound"},
		wantMessage: map[string]string{"AMIsReady": "alias=al2023@latest"},
	}, {
		name: "unsupported alias", class: class(nil), resolution: nodeclass.Resolution{Subnets: subnets, SecurityGroups: groups, InstanceProfile: "demo_1", AMIsErr: &amifamily.UnsupportedAliasError{Alias: "suse@latest"}},
		want: map[string]string{"AMIsReady": "False/AMIAliasUnsupported", "Ready": "False/AMIAliasUnsupported"},
	}, {
		name: "the role does not exist", class: class(nil),
		resolution: nodeclass.Resolution{Subnets: subnets, SecurityGroups: groups, AMIs: amis, InstanceProfileErr: &cloudprovider.NotFoundError{Resource: "role KarpenterNodeRole-demo"}},
		want:       map[string]string{"InstanceProfileReady": "False/RoleNotFound", "Ready": "False/RoleNotFound"},
	}, {
		name: "the named instance profile does not exist", class: class(func(c *awsv1.EC2NodeClass) { c.Spec.Role, c.Spec.InstanceProfile = "", ptr.To("nodes") }),
		resolution: nodeclass.Resolution{Subnets: subnets, SecurityGroups: groups, AMIs: amis, InstanceProfileErr: &cloudprovider.NotFoundError{Resource: "instance profile nodes"}},
		want:       map[string]string{"InstanceProfileReady": "False/InstanceProfileNotFound"},
	}, {
		name: "a field not acted on", class: class(func(c *awsv1.EC2NodeClass) {
			c.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("pg")}
			c.Spec.IPPrefixCount = ptr.To(int32(1))
		}), resolution: resolved,
		want:        map[string]string{"ValidationSucceeded": "False/FieldsNotActedOn", "SubnetsReady": "True/Resolved", "Ready": "False/FieldsNotActedOn"},
		wantMessage: map[string]string{"ValidationSucceeded": "spec.placementGroupSelector, spec.ipPrefixCount"},
	}, {
		// The user data sets the instance-store disks up and the instance types are sized by them.
		name: "instanceStorePolicy is acted on", class: class(func(c *awsv1.EC2NodeClass) {
			c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
		}), resolution: resolved,
		want: map[string]string{"ValidationSucceeded": "True/Valid", "Ready": "True/Ready"},
	}, {
		name: "access denied on a new class", class: class(nil), resolution: nodeclass.Resolution{SubnetsErr: denied, SecurityGroups: groups, AMIs: amis, InstanceProfile: "demo_1"},
		want: map[string]string{"SubnetsReady": "False/AccessDenied", "Ready": "False/AccessDenied"},
	}, {
		name: "a failed call keeps what was resolved", class: class(func(c *awsv1.EC2NodeClass) {
			c.Status = nodeclass.Decide(c, resolved, now.Add(-time.Hour))
		}), resolution: nodeclass.Resolution{SubnetsErr: errors.New("throttled"), SecurityGroups: groups, AMIs: amis, InstanceProfile: "demo_1"},
		want: map[string]string{"SubnetsReady": "True/Resolved", "Ready": "True/Ready"},
		check: func(t *testing.T, s awsv1.EC2NodeClassStatus) {
			if len(s.Subnets) != 1 {
				t.Errorf("subnets = %v, want the stored ones kept", s.Subnets)
			}
			if c := meta.FindStatusCondition(s.Conditions, "Ready"); !c.LastTransitionTime.Time.Equal(now.Add(-time.Hour)) {
				t.Errorf("Ready moved at %v, want its first transition kept", c.LastTransitionTime)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			status := nodeclass.Decide(tc.class, tc.resolution, now)
			for conditionType, want := range tc.want {
				c := meta.FindStatusCondition(status.Conditions, conditionType)
				if c == nil || string(c.Status)+"/"+c.Reason != want {
					t.Errorf("%s = %+v, want %s", conditionType, c, want)
					continue
				}
				if c.ObservedGeneration != 3 {
					t.Errorf("%s observed generation %d, want 3", conditionType, c.ObservedGeneration)
				}
			}
			for conditionType, want := range tc.wantMessage {
				if c := meta.FindStatusCondition(status.Conditions, conditionType); c == nil || !strings.Contains(c.Message, want) {
					t.Errorf("%s = %+v, want a message with %q", conditionType, c, want)
				}
			}
			if tc.check != nil {
				tc.check(t, status)
			}
		})
	}
}
