package v1_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

const validNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: Exists}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// TestNodePoolAdmission applies the NodePool CRD's schema and CEL rules on a real apiserver:
// what upstream Karpenter admits is admitted, with upstream's defaults, and what it refuses
// (at admission or, for some rules, only once its controller reads the NodePool) is refused
// with a message saying what to write.
func TestNodePoolAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	admission.Run(t, env.Client, manifests.Decode(t, validNodePool), admission.ReadCases(t, "testdata/nodepool-cases.yaml"))

	t.Run("status and kubectl's columns", func(t *testing.T) {
		ctx := context.Background()
		nodePool := &v1.NodePool{}
		if err := env.Client.Create(ctx, manifests.Decode(t, validNodePool)); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, nodePool); err != nil {
			t.Fatal(err)
		}
		nodePool.Spec.Weight = ptr.To[int32](10)
		if err := env.Client.Update(ctx, nodePool); err != nil {
			t.Fatalf("setting the weight, %v", err)
		}
		nodePool.Status = v1.NodePoolStatus{
			Resources:                   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("48Gi")},
			Nodes:                       ptr.To[int64](3),
			NodeClassObservedGeneration: 2,
			Conditions: []metav1.Condition{
				{Type: v1.ConditionTypeValidationSucceeded, Status: metav1.ConditionTrue, Reason: "Valid", LastTransitionTime: metav1.Now()},
				{Type: v1.ConditionTypeNodeClassReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
				{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
			},
		}
		if err := env.Client.Status().Update(ctx, nodePool); err != nil {
			t.Fatalf("writing the status, %v", err)
		}
		read := &v1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, read); err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(read.Status.Nodes, 0) != 3 || read.Status.NodeClassObservedGeneration != 2 || len(read.Status.Conditions) != 3 ||
			!read.Status.Resources.Memory().Equal(resource.MustParse("48Gi")) {
			t.Errorf("status read back as %+v", read.Status)
		}

		out, err := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "get", "nodepools", "-o", "wide").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get nodepools: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 {
			t.Fatalf("kubectl get nodepools -o wide printed\n%s\nwant a header and one row", out)
		}
		header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
		// Upstream's columns, Age aside: its value is the NodePool's age.
		want := map[string]string{"NAME": "default", "NODECLASS": "default", "NODES": "3", "READY": "True", "WEIGHT": "10", "CPU": "12", "MEMORY": "48Gi"}
		if strings.Join(header, " ") != "NAME NODECLASS NODES READY AGE WEIGHT CPU MEMORY" || len(row) != len(header) {
			t.Fatalf("kubectl get nodepools -o wide printed\n%s\nwant upstream's columns NAME NODECLASS NODES READY AGE WEIGHT CPU MEMORY", out)
		}
		for i, column := range header {
			if value, ok := want[column]; ok && row[i] != value {
				t.Errorf("column %s reads %q, want %q", column, row[i], value)
			}
		}
	})
}
