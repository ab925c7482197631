package disruption_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/disruption"
)

func nodePool() *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
			NodeClaimTemplateObjectMeta: v1.NodeClaimTemplateObjectMeta{Labels: map[string]v1.LabelValue{"team": "a"}},
			Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "c5.large"}},
					{Key: "karpenter.k8s.aws/instance-generation", Operator: v1.NodeSelectorOpGte, Values: []string{"5"}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Taints:       []v1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoSchedule}},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
			},
		},
			Disruption: v1.Disruption{Budgets: []v1.Budget{{Nodes: "10%"}}},
		},
	}
}

func nodeClass() *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Tags: map[string]string{"team": "a"}},
		Status: awsv1.EC2NodeClassStatus{AMIs: []awsv1.AMI{{ID: "ami-new"}, {ID: "ami-arm"}},
			Subnets:        []awsv1.Subnet{{ID: "subnet-a", Zone: "us-west-2a"}, {ID: "subnet-b", Zone: "us-west-2b"}},
			SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-cluster"}, {ID: "sg-nodes"}}},
	}
}

// launchedFrom is a NodeClaim as the launcher stamps it for the NodePool and class.
func launchedFrom(np *v1.NodePool, class *awsv1.EC2NodeClass) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde",
			Labels: map[string]string{v1.NodePoolLabelKey: np.Name, corev1.LabelInstanceTypeStable: "m5.large", "karpenter.k8s.aws/instance-generation": "5"},
			Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey: disruption.NodePoolHash(np), v1.NodePoolHashVersionAnnotationKey: disruption.HashVersion,
				awsv1.EC2NodeClassHashAnnotationKey: disruption.EC2NodeClassHash(class), awsv1.EC2NodeClassHashVersionAnnotationKey: disruption.HashVersion,
			}},
		Status: v1.NodeClaimStatus{ImageID: "ami-new"},
	}
}

func TestDrifted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(np *v1.NodePool, class *awsv1.EC2NodeClass, nc *v1.NodeClaim)
		// running changes the instance's network; unknown leaves it unknown.
		running func(*cloudprovider.Instance)
		unknown bool
		// typeGone is the cloud no longer offering the instance type.
		typeGone bool
		want     string
	}{
		{name: "its instance type no longer offered", change: func(*v1.NodePool, *awsv1.EC2NodeClass, *v1.NodeClaim) {}, typeGone: true,
			want: disruption.ReasonInstanceTypeNotFound},
		{name: "unchanged", change: func(*v1.NodePool, *awsv1.EC2NodeClass, *v1.NodeClaim) {}},
		{name: "a template label", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Labels["team"] = "b"
		}, want: disruption.ReasonNodePoolDrifted},
		{name: "a taint", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.Taints = np.Spec.Template.Spec.Taints[:1]
		}, want: disruption.ReasonNodePoolDrifted},
		{name: "taints reordered", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}},
		{name: "expireAfter", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h")
		}, want: disruption.ReasonNodePoolDrifted},
		{name: "the class's name", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.NodeClassRef.Name = "other"
		}, want: disruption.ReasonNodePoolDrifted},
		{name: "budgets and limits are behaviour", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
			np.Spec.Limits = v1.Limits{corev1.ResourceCPU: *resourceQuantity("10")}
			np.Spec.Weight = new(int32)
		}},
		{name: "another hash version is stamped again, not drifted", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, nc *v1.NodeClaim) {
			np.Spec.Template.Labels["team"] = "b"
			nc.Annotations[v1.NodePoolHashVersionAnnotationKey] = "v3"
		}},
		{name: "a requirement the node no longer meets", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"c5.large"}
		}, want: disruption.ReasonRequirementsDrifted},
		{name: "Gte the node no longer meets", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.Requirements[1].Values = []string{"6"}
		}, want: disruption.ReasonRequirementsDrifted},
		{name: "a requirement widened", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.Requirements[0].Values = append(np.Spec.Template.Spec.Requirements[0].Values, "r5.large")
		}},
		{name: "a requirement on a label the node lacks", change: func(np *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-hypervisor", Operator: corev1.NodeSelectorOpIn, Values: []string{"nitro"}})
		}},
		{name: "the class's tags", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Spec.Tags["team"] = "b"
		}, want: disruption.ReasonNodeClassDrifted},
		{name: "the class's selectors are compared by what they resolve", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-new"}}
		}},
		{name: "the image moved", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.AMIs = []awsv1.AMI{{ID: "ami-newer"}}
		}, want: disruption.ReasonAMIDrifted},
		{name: "the class has not resolved its images", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.AMIs = nil
		}},
		{name: "the subnet is no longer selected", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.Subnets = class.Status.Subnets[1:]
		}, want: disruption.ReasonSubnetDrifted},
		{name: "a security group added to the class", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.SecurityGroups = append(class.Status.SecurityGroups, awsv1.SecurityGroup{ID: "sg-more"})
		}, want: disruption.ReasonSecurityGroupDrifted},
		{name: "a security group removed from the class", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.SecurityGroups = class.Status.SecurityGroups[:1]
		}, want: disruption.ReasonSecurityGroupDrifted},
		{name: "security groups in another order", change: func(_ *v1.NodePool, _ *awsv1.EC2NodeClass, _ *v1.NodeClaim) {},
			running: func(i *cloudprovider.Instance) { i.SecurityGroupIDs = []string{"sg-nodes", "sg-cluster"} }},
		{name: "the class has not resolved its subnets and groups", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.Subnets, class.Status.SecurityGroups = nil, nil
		}},
		{name: "the instance's network is not known yet", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.Subnets = class.Status.Subnets[1:]
		}, unknown: true},
		{name: "the cloud does not say the instance's network", change: func(_ *v1.NodePool, class *awsv1.EC2NodeClass, _ *v1.NodeClaim) {
			class.Status.Subnets = class.Status.Subnets[1:]
			class.Status.SecurityGroups = class.Status.SecurityGroups[1:]
		}, running: func(i *cloudprovider.Instance) { i.SubnetID, i.SecurityGroupIDs = "", nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np, class := nodePool(), nodeClass()
			nc := launchedFrom(np, class)
			tc.change(np, class, nc)
			instance := &cloudprovider.Instance{SubnetID: "subnet-a", SecurityGroupIDs: []string{"sg-cluster", "sg-nodes"}}
			if tc.running != nil {
				tc.running(instance)
			}
			if tc.unknown {
				instance = nil
			}
			got := disruption.Drifted(nc, nil, np, class, disruption.Observed{Instance: instance, InstanceTypeGone: tc.typeGone})
			if (got == nil) != (tc.want == "") || got != nil && got.Reason != tc.want {
				t.Errorf("Drifted = %+v, want %q", got, tc.want)
			}
		})
	}
}

func TestDriftReadsTheNodesLabels(t *testing.T) {
	np, class := nodePool(), nodeClass()
	nc := launchedFrom(np, class)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelInstanceTypeStable: "r5.large"}}}
	if got := disruption.Drifted(nc, node, np, class, disruption.Observed{}); got == nil || got.Reason != disruption.ReasonRequirementsDrifted {
		t.Errorf("Drifted = %+v, want %s from the node's label", got, disruption.ReasonRequirementsDrifted)
	}
}

func TestNodePoolHashIsStable(t *testing.T) {
	// The hash is stamped on every NodeClaim: a change in it drifts every node, so it is pinned.
	const want = "4726812897636806702"
	if got := disruption.NodePoolHash(nodePool()); got != want {
		t.Errorf("NodePoolHash = %s, want %s: if the computation changed on purpose, bump disruption.HashVersion", got, want)
	}
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
