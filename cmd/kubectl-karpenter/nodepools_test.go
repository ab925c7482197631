package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpenterapis "karpenter.sh/karpenter/pkg/apis"
	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	karpenterv1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/test/environment"
)

// TestPlanReadsNodePoolsAndNodeOverlays: against a cluster, the plan launches for its NodePool
// whose EC2NodeClass is Ready, says why the other plans nothing, and applies the cluster's
// NodeOverlays only with --feature-gates NodeOverlay=true, as the controller does; those of
// --node-overlays replace them.
func TestPlanReadsNodePoolsAndNodeOverlays(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{karpenterapis.AddToScheme}})
	ctx := context.Background()
	create := func(objects ...client.Object) {
		for _, o := range objects {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	ready, waiting := ec2NodeClass("ready"), ec2NodeClass("waiting")
	create(ready, waiting)
	stored := ready.DeepCopy()
	meta.SetStatusCondition(&ready.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := env.Client.Status().Patch(ctx, ready, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	create(m5LargeNodePool("default", "ready"), m5LargeNodePool("waiting", "waiting"), &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "discount"},
		Spec: v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			Price: ptr.To("0.001")}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pods.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers:\n  - {name: web, image: nginx, resources: {requests: {cpu: '1'}}}\n")
	writeFile(t, filepath.Join(dir, "overlays.yaml"), "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: file}\nspec:\n"+
		"  requirements:\n  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}\n  price: '0.002'\n")

	planned := func(more ...string) plan.Report {
		t.Helper()
		args := append([]string{"plan", "--kubeconfig", env.KubeconfigPath, "--instance-types", "testdata/instance-types.yaml", "--pods", filepath.Join(dir, "pods.yaml"), "-o", "json"}, more...)
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, &stdout, &stderr); code != exitPlaced {
			t.Fatalf("%v: exit status %d; stderr: %s", more, code, stderr.String())
		}
		var report plan.Report
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatal(err)
		}
		return report
	}
	report := planned()
	if len(report.NewNodes) != 1 || report.NewNodes[0].Pool != "nodepool/default" || report.NewNodes[0].InstanceType != "m5.large" || report.PricePerHour != 0.096 {
		t.Errorf("new nodes %+v, want one m5.large of nodepool/default at its $0.096/h: without the gate, the cluster's NodeOverlays apply nowhere", report.NewNodes)
	}
	if len(report.SkippedPools) != 1 || report.SkippedPools[0].Kind != "NodePool" || report.SkippedPools[0].Name != "waiting" ||
		!strings.Contains(report.SkippedPools[0].Reason, "EC2NodeClass waiting has no Ready condition yet") {
		t.Errorf("skipped %+v, want NodePool waiting, its node class not Ready", report.SkippedPools)
	}
	if report := planned("--feature-gates", "NodeOverlay=true"); report.PricePerHour != 0.001 {
		t.Errorf("with the gate, $%g/h, want the cluster's NodeOverlay's $0.001/h", report.PricePerHour)
	}
	if report := planned("--feature-gates", "NodeOverlay=true", "--node-overlays", filepath.Join(dir, "overlays.yaml")); report.PricePerHour != 0.002 {
		t.Errorf("with --node-overlays, $%g/h, want the file's NodeOverlay's $0.002/h, not the cluster's", report.PricePerHour)
	}
}

func ec2NodeClass(name string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		Role:                       "KarpenterNodeRole-demo",
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
	}}
}

// m5LargeNodePool launches on-demand m5.large nodes of the class.
func m5LargeNodePool(name, class string) *karpenterv1.NodePool {
	return &karpenterv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: karpenterv1.NodePoolSpec{Template: karpenterv1.NodeClaimTemplate{Spec: karpenterv1.NodeClaimTemplateSpec{
		Requirements: []karpenterv1.NodeSelectorRequirementWithMinValues{
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeOnDemand}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
		},
		NodeClassRef: &karpenterv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: class},
	}}}}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
