package warnings_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/provisioner/warnings"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestWarningEventsOnProvisioners runs the controller as the operator does: a Provisioner
// created with a setting v1alpha5.Warnings names gets a Warning Event for it, and so does one
// whose spec changes to such a setting.
func TestWarningEventsOnProvisioners(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := t.Context()
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{warnings.Name}, CloudProvider: cloudprovider.NewRegistry(),
	}})

	created := builders.Provisioner(builders.ProvisionerOptions{Name: "created"})
	created.Spec.TTLSecondsUntilExpired = ptr.To[int64](0)
	changed := builders.Provisioner(builders.ProvisionerOptions{Name: "changed"})
	both := builders.Provisioner(builders.ProvisionerOptions{Name: "both"})
	both.Spec.TTLSecondsAfterEmpty = ptr.To[int64](30)
	both.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true)}
	for _, p := range []*v1alpha5.Provisioner{created, changed, both} {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	expectWarning(t, env, created.Name, v1alpha5.ReasonZeroTTLUntilExpired)
	expectWarning(t, env, both.Name, v1alpha5.ReasonTTLAfterEmptyWithConsolidation)

	changed.Spec.TTLSecondsUntilExpired = ptr.To[int64](0)
	if err := env.Client.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	expectWarning(t, env, changed.Name, v1alpha5.ReasonZeroTTLUntilExpired)
}

func expectWarning(t *testing.T, env *environment.Environment, provisioner, reason string) {
	t.Helper()
	eventually.Holds(t, "a Warning "+reason+" event on provisioner "+provisioner, func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(t.Context(), events); err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Provisioner" && e.InvolvedObject.Name == provisioner && e.Type == corev1.EventTypeWarning && e.Reason == reason
		}), "", nil
	})
}
