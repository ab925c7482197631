package status_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/nodepool/status"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// The getting-started guide's objects, as users apply them.
const gettingStartedClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
`

const gettingStartedPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
  limits:
    cpu: 1000
`

// TestNodePoolStatusFollowsItsClassAndNodeClaims on a real apiserver: a NodePool whose class
// is missing says so (condition and Warning Event), is Ready once its class is, and counts the
// NodeClaims launched for it.
func TestNodePoolStatusFollowsItsClassAndNodeClaims(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := t.Context()
	pool := &v1.NodePool{}
	if err := yaml.UnmarshalStrict([]byte(gettingStartedPool), pool); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{status.Name}, CloudProvider: cloudprovider.NewRegistry(),
	}})
	expect := func(what string, holds func(*v1.NodePool) bool) {
		t.Helper()
		eventually.Holds(t, what, func() (bool, string, error) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
				return false, "", err
			}
			return holds(pool), fmt.Sprintf("%+v", pool.Status), nil
		})
	}
	ready := func(s metav1.ConditionStatus, reason string) func(*v1.NodePool) bool {
		return func(np *v1.NodePool) bool {
			c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionTypeReady)
			return c != nil && c.Status == s && c.Reason == reason
		}
	}
	expect("Ready False: the class does not exist", ready(metav1.ConditionFalse, status.ReasonNodeClassNotFound))
	eventually.Holds(t, "a Warning Event names the missing class", func() (bool, string, error) {
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace("default")); err != nil {
			return false, "", err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == pool.Name && e.Type == corev1.EventTypeWarning && e.Reason == status.ReasonNodeClassNotFound {
				return true, e.Message, nil
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items)), nil
	})

	class := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict([]byte(gettingStartedClass), class); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	expect("Ready Unknown: the class has no Ready condition yet", ready(metav1.ConditionUnknown, status.ReasonNodeClassNotReconciled))
	stored := class.DeepCopy()
	meta.SetStatusCondition(&class.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := env.Client.Status().Patch(ctx, class, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	expect("Ready True once the class is", ready(metav1.ConditionTrue, v1.ConditionTypeReady))

	for i, capacity := range [][]string{{"cpu", "2", "memory", "8Gi"}, {"cpu", "4", "memory", "16Gi"}} {
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%d", i), Labels: map[string]string{v1.NodePoolLabelKey: pool.Name}},
			Spec: v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
		if err := env.Client.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		stored := claim.DeepCopy()
		claim.Status.Capacity = builders.Resources(capacity...)
		if err := env.Client.Status().Patch(ctx, claim, client.MergeFrom(stored)); err != nil {
			t.Fatal(err)
		}
	}
	expect("2 nodes of 6 cpu and 24Gi", func(np *v1.NodePool) bool {
		return np.Status.Nodes != nil && *np.Status.Nodes == 2 && builders.EqualResources(np.Status.Resources, builders.Resources("cpu", "6", "memory", "24Gi"))
	})
}
