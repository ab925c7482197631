// Package nodeclasses makes EC2NodeClasses for tests whose NodePools launch through a fake cloud:
// Ready as the nodeclass controller would mark them once their selectors resolved, without it.
package nodeclasses

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
)

// Ready creates an EC2NodeClass selecting by the discovery tag test, and marks it Ready.
func Ready(t testing.TB, c client.Client, name string) *awsv1.EC2NodeClass {
	t.Helper()
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		Role:                       "KarpenterNodeRole-test",
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
	}}
	if err := c.Create(t.Context(), class); err != nil {
		t.Fatalf("creating ec2nodeclass %s, %v", name, err)
	}
	stored := class.DeepCopy()
	meta.SetStatusCondition(&class.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := c.Status().Patch(t.Context(), class, client.MergeFrom(stored)); err != nil {
		t.Fatalf("marking ec2nodeclass %s Ready, %v", name, err)
	}
	return class
}
