package webhook_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// TestAdmitsKarpenterV01Manifests keeps the promise that manifests written for Karpenter v0.1,
// example account ids and all, still apply with the webhook installed.
func TestAdmitsKarpenterV01Manifests(t *testing.T) {
	scheme := apis.NewScheme()
	for _, object := range manifests.DecodeFile(t, "../apis/autoscaling/v1alpha1/testdata/v0.1-examples.yaml") {
		typed, err := scheme.New(object.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, typed); err != nil {
			t.Fatalf("decoding %s %s, %v", object.GetKind(), object.GetName(), err)
		}
		if err := admit(typed.(client.Object)); err != nil {
			t.Errorf("%s %s was rejected: %v", object.GetKind(), object.GetName(), err)
		}
	}
}
