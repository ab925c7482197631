package status_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	knativeapis "knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/provisioner/status"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestResourcesFollowNodes keeps status.resources on a real apiserver as nodes come and go,
// without touching the status fields the provisioning controller owns.
func TestResourcesFollowNodes(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := t.Context()
	provisioner := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	if err := env.Client.Create(ctx, provisioner); err != nil {
		t.Fatal(err)
	}
	// The provisioning controller's part of the status.
	scaled := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	stored := provisioner.DeepCopy()
	provisioner.Status.LastScaleTime = &knativeapis.VolatileTime{Inner: scaled}
	if err := env.Client.Status().Patch(ctx, provisioner, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	node := func(name, provisioner string, pairs ...string) *corev1.Node {
		labels := map[string]string{}
		if provisioner != "" {
			labels[v1alpha5.ProvisionerNameLabelKey] = provisioner
		}
		n := builders.Node(builders.NodeOptions{Name: name, Labels: labels, Capacity: builders.Resources(pairs...)})
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	small := node("small", "default", "cpu", "2", "memory", "8Gi", "pods", "29")
	large := node("large", "default", "cpu", "4", "memory", "16Gi", "pods", "58")
	node("elsewhere", "other", "cpu", "64", "memory", "256Gi", "pods", "110")
	node("unmanaged", "", "cpu", "64", "memory", "256Gi", "pods", "110")

	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{status.Name}, CloudProvider: cloudprovider.NewRegistry(),
	}})
	expect := func(want corev1.ResourceList) {
		t.Helper()
		eventually.Holds(t, fmt.Sprintf("status.resources %v", want), func() (bool, string, error) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(provisioner), provisioner); err != nil {
				return false, "", err
			}
			got := provisioner.Status.Resources
			return builders.EqualResources(got, want) && len(got) == len(want), fmt.Sprint(got), nil
		})
		if last := provisioner.Status.LastScaleTime; last == nil || !last.Inner.Equal(&scaled) {
			t.Errorf("status.lastScaleTime %v, want the provisioning controller's %v kept", last, scaled)
		}
	}
	expect(builders.Resources("cpu", "6", "memory", "24Gi", "pods", "87"))
	if err := env.Client.Delete(ctx, small); err != nil {
		t.Fatal(err)
	}
	expect(builders.Resources("cpu", "4", "memory", "16Gi", "pods", "58"))
	if err := env.Client.Delete(ctx, large); err != nil {
		t.Fatal(err)
	}
	expect(nil)
}
