package v1alpha1_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

const validNodeOverlay = `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: default}
spec:
  requirements:
    - {key: karpenter.sh/capacity-type, operator: Exists}
`

// TestNodeOverlayAdmission applies the NodeOverlay CRD's schema and CEL rules on a real
// apiserver: what upstream Karpenter admits is admitted and what it refuses is refused with a
// message saying what to write.
func TestNodeOverlayAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	admission.Run(t, env.Client, manifests.Decode(t, validNodeOverlay), admission.ReadCases(t, "testdata/nodeoverlay-cases.yaml"))

	t.Run("status and kubectl's columns", func(t *testing.T) {
		ctx := context.Background()
		overlay := manifests.Decode(t, validNodeOverlay)
		overlay.Object["spec"].(map[string]any)["weight"] = int64(10)
		if err := env.Client.Create(ctx, overlay); err != nil {
			t.Fatal(err)
		}
		read := &v1alpha1.NodeOverlay{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, read); err != nil {
			t.Fatal(err)
		}
		read.Status.Conditions = []metav1.Condition{
			{Type: v1alpha1.ConditionTypeValidationSucceeded, Status: metav1.ConditionTrue, Reason: "Valid", LastTransitionTime: metav1.Now()},
			{Type: v1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
		}
		if err := env.Client.Status().Update(ctx, read); err != nil {
			t.Fatalf("writing the status, %v", err)
		}
		out, err := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "get", "overlays", "-o", "wide").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get overlays: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY AGE WEIGHT" {
			t.Fatalf("kubectl get overlays -o wide printed\n%s\nwant upstream's columns NAME READY AGE WEIGHT and one row", out)
		}
		if row := strings.Fields(lines[1]); row[0] != "default" || row[1] != "True" || row[3] != "10" {
			t.Errorf("kubectl get overlays -o wide printed the row %q, want default, True, its age and 10", lines[1])
		}
	})
}
