package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// controllerUser is the controller's identity as config/ installs it.
const controllerUser = "system:serviceaccount:karpenter:karpenter"

// TestNothingIsAdmittedUncheckedWhileTheWebhookIsDown is finding 10 of issue 34: the webhook
// configurations of the release had no rules until the webhook started and filled them in, so
// until then (or for ever, if its Deployment never ran) every object was admitted unvalidated,
// and the SubjectAccessReview that guards the controller's cluster-wide */scale grant was
// skipped: anyone who may write a HorizontalAutoscaler could have the controller resize any
// Deployment. The release ships the rules with failurePolicy Fail, so with no webhook running
// such an autoscaler is refused; what the controller writes (status, and a group's adopted
// size) and deletions are not held up by a webhook that is down.
func TestNothingIsAdmittedUncheckedWhileTheWebhookIsDown(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := context.Background()
	// Objects that exist before the release is installed, as after an upgrade.
	existing := provisioner("stored", nil)
	group := nodeGroup("stored", v1alpha1.AWSEKSNodeGroup, "demo/general")
	group.Spec.Replicas = nil
	for _, object := range []client.Object{existing, group, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}}} {
		if err := env.Client.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	// The release's webhook configurations; no webhook runs behind their Service.
	for _, object := range manifests.DecodeFile(t, "../../config/webhook/webhook.yaml") {
		if object.GetKind() != "ValidatingWebhookConfiguration" && object.GetKind() != "MutatingWebhookConfiguration" {
			continue
		}
		if err := env.Client.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	// developer may write HorizontalAutoscalers but not scale Deployments; the controller may
	// write what its ClusterRole lets it.
	grantCluster(t, env.Client, "ha-author", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"horizontalautoscalers"}, Verbs: []string{"create"}}, "developer")
	grantCluster(t, env.Client, "controller", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group, v1alpha5.SchemeGroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "patch", "update"}}, controllerUser)

	// The apiserver picks the configurations up asynchronously.
	eventually.Holds(t, "a HorizontalAutoscaler its author may not scale the target of refused", func() (bool, string, error) {
		err := impersonating(t, env.Config, "developer").Create(ctx, horizontalAutoscaler("unscalable", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.ScaleTargetRef = v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		}), client.DryRunAll)
		if err == nil {
			return false, "admitted", nil
		}
		// The defaulting webhook is called first, and is down as well.
		return strings.Contains(err.Error(), `failed calling webhook "defaulting.webhook.karpenter.sh"`) ||
			strings.Contains(err.Error(), `failed calling webhook "validation.webhook.karpenter.sh"`), err.Error(), nil
	}, eventually.Timeout(time.Minute))

	t.Run("a Provisioner's status is written", func(t *testing.T) {
		stored := existing.DeepCopy()
		existing.StatusConditions().MarkTrue(v1alpha5.ConditionPricesCurrent)
		if err := impersonating(t, env.Config, controllerUser).Status().Patch(ctx, existing, client.MergeFrom(stored)); err != nil {
			t.Errorf("patching the status, %v", err)
		}
	})
	t.Run("a group's size is adopted by the controller", func(t *testing.T) {
		stored := group.DeepCopy()
		group.Spec.Replicas = ptr.To[int32](3)
		if err := impersonating(t, env.Config, controllerUser).Patch(ctx, group, client.MergeFrom(stored)); err != nil {
			t.Errorf("patching spec.replicas, %v", err)
		}
	})
	t.Run("a Provisioner is deleted", func(t *testing.T) {
		if err := env.Client.Delete(ctx, existing); err != nil {
			t.Errorf("deleting, %v", err)
		}
	})
}

// grantCluster binds a ClusterRole of one rule to users.
func grantCluster(t *testing.T, c client.Client, name string, rule rbacv1.PolicyRule, users ...string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
	for _, user := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
	}
	for _, object := range []client.Object{role, binding} {
		if err := c.Create(context.Background(), object); err != nil {
			t.Fatal(err)
		}
	}
}

// impersonating is a client that impersonates user.
func impersonating(t *testing.T, config *rest.Config, user string) client.Client {
	t.Helper()
	copied := rest.CopyConfig(config)
	copied.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(copied, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(fmt.Errorf("a client for %s, %w", user, err))
	}
	return c
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
