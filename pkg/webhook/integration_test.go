package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/system"
	certresources "knative.dev/pkg/webhook/certificates/resources"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/manifests"
	"karpenter.sh/karpenter/pkg/webhook"
)

// TestWebhookOnAPIServer runs the webhook as cmd/webhook does against a real apiserver: it
// issues its certificate into an empty Secret, registers itself in webhook configurations
// that name its Service, and then every object goes through it. The Service is an
// ExternalName for localhost, which the apiserver resolves to the in-process server while
// still verifying the certificate against the Service's DNS name.
//
//nolint:gocyclo // One story on one API server: its steps read in order and share state.
func TestWebhookOnAPIServer(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx, cancel := context.WithCancel(context.Background())
	options := webhook.Options{
		Namespace:                      "karpenter",
		ServiceName:                    "karpenter-webhook",
		SecretName:                     "karpenter-webhook-cert",
		Port:                           environment.FreePort(t),
		MutatingWebhookConfiguration:   "defaulting.webhook.karpenter.sh",
		ValidatingWebhookConfiguration: "validation.webhook.karpenter.sh",
		LeaderElection:                 true,
		Cloud:                          awsIDs(),
	}
	// Objects stored before the release is installed, as after an upgrade that adds a rule: once
	// it is, nothing is admitted until the webhook runs.
	legacyGroup := nodeGroup("sng-legacy", v1alpha1.AWSEKSNodeGroup, "general")
	legacyAutoscaler := horizontalAutoscaler("ha-legacy", withQuery("rate(x[5m]"))
	legacyProducer := scheduleProducer("mp-legacy", func(s *v1alpha1.ScheduleSpec) { s.Behaviors[0].Start.Weekdays = ptr.To("mon-fry") })
	for _, legacy := range []client.Object{legacyGroup.DeepCopy(), legacyAutoscaler.DeepCopy(), legacyProducer.DeepCopy()} {
		if err := env.Client.Create(ctx, legacy); err != nil {
			t.Fatal(err)
		}
	}
	installedMutating, installedValidating := install(t, env.Client, options)

	t.Setenv(system.NamespaceEnvKey, options.Namespace) // restored after the test; Run sets it
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Sugar()
	done := make(chan error, 1)
	go func() { done <- webhook.Run(logging.WithLogger(ctx, logger), env.Config, options) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("webhook stopped with %v", err)
		}
	})

	secret := waitForRegistration(t, env.Client, options)

	t.Run("the webhook registers itself with the rules the release ships", func(t *testing.T) {
		sameRegistration(t, env.Client, installedMutating, installedValidating)
	})

	t.Run("the certificate in the Secret verifies for the Service's DNS name", func(t *testing.T) {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(secret.Data[certresources.CACert]) {
			t.Fatal("no CA certificate in the Secret")
		}
		block, _ := pem.Decode(secret.Data[certresources.ServerCert])
		if block == nil {
			t.Fatal("no serving certificate in the Secret")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "karpenter-webhook.karpenter.svc"}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("answers the kubelet's HTTPS probe", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(secret.Data[certresources.CACert])
		httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "karpenter-webhook.karpenter.svc"}}}
		request, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", options.Port), nil)
		if err != nil {
			t.Fatal(err)
		}
		request.Header.Set("User-Agent", "kube-probe/1.34")
		response, err := httpClient.Do(request)
		if err != nil {
			t.Fatal(err)
		}
		response.Body.Close()
		if response.StatusCode != http.StatusOK {
			t.Errorf("probe answered %s", response.Status)
		}
	})

	t.Run("rejects the corpus with messages naming the field", func(t *testing.T) {
		for _, c := range badObjects() {
			t.Run(c.name, func(t *testing.T) {
				err := env.Client.Create(context.Background(), c.object.DeepCopyObject().(client.Object), client.DryRunAll)
				if err == nil {
					t.Fatalf("admitted, want %q", c.want)
				}
				want := `admission webhook "validation.webhook.karpenter.sh" denied the request: validation failed: ` + c.want
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n got %v\nwant %s", err, want)
				}
			})
		}
	})

	t.Run("a target written 70% gets the schema's message alone, not the defaulter's decoding error", func(t *testing.T) {
		h := manifests.Decode(t, `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: ha-percent, namespace: default}
spec:
  scaleTargetRef: {apiVersion: autoscaling.karpenter.sh/v1alpha1, kind: ScalableNodeGroup, name: workers}
  maxReplicas: 3
  metrics:
  - prometheus: {query: "up", target: {type: Utilization, value: "70%"}}`)
		err := env.Client.Create(context.Background(), h, client.DryRunAll)
		if err == nil {
			t.Fatal("admitted")
		}
		if want := "write 70, a percentage without the % sign"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "webhook") {
			t.Errorf("error\n got %v\nwant the schema's %q alone", err, want)
		}
	})

	t.Run("admits and defaults a HorizontalAutoscaler", func(t *testing.T) {
		h := horizontalAutoscaler("ha-defaults", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.Behavior.ScaleDown = &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}
		})
		if err := env.Client.Create(context.Background(), h); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.HorizontalAutoscaler{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(h), got); err != nil {
			t.Fatal(err)
		}
		up := autoscaler.ScaleUpRules(v1alpha1.Behavior{})
		checkRules(t, "scaleUp", got.Spec.Behavior.ScaleUp, up.StabilizationWindow, up)
		down := autoscaler.ScaleDownRules(v1alpha1.Behavior{})
		checkRules(t, "scaleDown", got.Spec.Behavior.ScaleDown, time.Minute, down)
	})

	t.Run("admits and defaults a MetricsProducer schedule", func(t *testing.T) {
		m := scheduleProducer("mp-defaults", nil)
		if err := env.Client.Create(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.MetricsProducer{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
			t.Fatal(err)
		}
		if tz := got.Spec.ScheduleSpec.Timezone; tz == nil || *tz != "UTC" {
			t.Errorf("timezone %v, want UTC", tz)
		}
	})

	t.Run("admits good objects", func(t *testing.T) {
		for _, object := range goodObjects() {
			if err := env.Client.Create(context.Background(), object); err != nil {
				t.Errorf("%s: %v", object.GetName(), err)
			}
		}
	})

	t.Run("admits metadata changes to objects stored before the webhook, rejects spec changes", func(t *testing.T) {
		ctx := context.Background()
		// The defaulting webhook fills in the stored objects' defaults on these updates.
		for _, legacy := range []client.Object{legacyGroup.DeepCopy(), legacyAutoscaler.DeepCopy(), legacyProducer.DeepCopy()} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(legacy), legacy); err != nil {
				t.Fatal(err)
			}
			legacy.SetLabels(map[string]string{"team": "a"})
			legacy.SetFinalizers([]string{"karpenter.sh/test"})
			if err := env.Client.Update(ctx, legacy); err != nil {
				t.Errorf("relabelling %s: %v", legacy.GetName(), err)
			}
		}
		group := legacyGroup.DeepCopy()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(group), group); err != nil {
			t.Fatal(err)
		}
		group.Spec.Replicas = ptr.To[int32](3)
		if err := env.Client.Update(ctx, group); err != nil {
			t.Errorf("resizing a group whose id predates the webhook: %v", err)
		}
		group.Spec.ID = "still-not-a-node-group"
		err := env.Client.Update(ctx, group)
		if want := "id is immutable"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("changing the id: %v, want %q", err, want)
		}
		for _, legacy := range []client.Object{legacyGroup.DeepCopy(), legacyAutoscaler.DeepCopy(), legacyProducer.DeepCopy()} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(legacy), legacy); err != nil {
				t.Fatal(err)
			}
			legacy.SetFinalizers(nil)
			if err := env.Client.Update(ctx, legacy); err != nil {
				t.Errorf("removing the finalizer of %s: %v", legacy.GetName(), err)
			}
		}
	})

	t.Run("a HorizontalAutoscaler needs its author to be allowed to scale the target", func(t *testing.T) {
		ctx := context.Background()
		// Both users may write HorizontalAutoscalers; only the operator may scale Deployments.
		grant := func(name string, rule rbacv1.PolicyRule, users ...string) {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}, Rules: []rbacv1.PolicyRule{rule}}
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			}
			for _, user := range users {
				binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
			}
			for _, object := range []client.Object{role, binding} {
				if err := env.Client.Create(ctx, object); err != nil {
					t.Fatal(err)
				}
			}
		}
		grant("ha-authors", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"horizontalautoscalers"}, Verbs: []string{"get", "create", "update"}}, "developer", "operator")
		grant("deployment-scalers", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"update"}}, "operator")
		as := func(user string) client.Client {
			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
			c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		onDeployment := func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.ScaleTargetRef = v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		}
		refused := `may not update deployments.apps/scale "web" in namespace default`

		err := as("developer").Create(ctx, horizontalAutoscaler("ha-developer", onDeployment))
		if err == nil || !strings.Contains(err.Error(), refused) || !strings.Contains(err.Error(), "spec.scaleTargetRef") {
			t.Errorf("created by a user who may not scale the target: %v, want a refusal containing %q", err, refused)
		}
		owned := horizontalAutoscaler("ha-operator", onDeployment)
		if err := as("operator").Create(ctx, owned); err != nil {
			t.Fatalf("created by a user who may scale the target: %v", err)
		}
		// Raising the bounds of someone else's autoscaler drives the target as much as creating one.
		widened := &v1alpha1.HorizontalAutoscaler{}
		if err := as("developer").Get(ctx, client.ObjectKeyFromObject(owned), widened); err != nil {
			t.Fatal(err)
		}
		widened.Spec.MaxReplicas = 1000
		if err := as("developer").Update(ctx, widened); err == nil || !strings.Contains(err.Error(), refused) {
			t.Errorf("a spec change by a user who may not scale the target: %v, want a refusal containing %q", err, refused)
		}
		widened.Labels = map[string]string{"team": "a"}
		widened.Spec.MaxReplicas = owned.Spec.MaxReplicas
		if err := as("developer").Update(ctx, widened); err != nil {
			t.Errorf("relabelling leaves the target as it was and needs no scale access: %v", err)
		}
	})
}

func checkRules(t *testing.T, direction string, got *v1alpha1.ScalingRules, window time.Duration, want autoscaler.Rules) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s not defaulted", direction)
	}
	if got.StabilizationWindowSeconds == nil || time.Duration(*got.StabilizationWindowSeconds)*time.Second != window {
		t.Errorf("%s.stabilizationWindowSeconds %v, want %s", direction, got.StabilizationWindowSeconds, window)
	}
	if got.SelectPolicy == nil || *got.SelectPolicy != want.SelectPolicy {
		t.Errorf("%s.selectPolicy %v, want %s", direction, got.SelectPolicy, want.SelectPolicy)
	}
	if len(got.Policies) != len(want.Policies) {
		t.Fatalf("%s.policies %v, want %v", direction, got.Policies, want.Policies)
	}
	for i := range got.Policies {
		if got.Policies[i] != want.Policies[i] {
			t.Errorf("%s.policies[%d] %v, want %v", direction, i, got.Policies[i], want.Policies[i])
		}
	}
}

// install creates what the release installs for the webhook: its namespace, the empty
// certificate Secret, the Service and the two webhook configurations of config/webhook, with
// their rules and no CA, pointed at the test's port. It returns the configurations as the
// apiserver stored them.
func install(t *testing.T, c client.Client, o webhook.Options) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	ctx := context.Background()
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for _, object := range manifests.DecodeFile(t, "../../config/webhook/webhook.yaml") {
		var into any
		switch object.GetKind() {
		case "MutatingWebhookConfiguration":
			into = mutating
		case "ValidatingWebhookConfiguration":
			into = validating
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	if mutating.Name != o.MutatingWebhookConfiguration || validating.Name != o.ValidatingWebhookConfiguration {
		t.Fatalf("config/webhook has configurations %q and %q, want those the webhook's flags name", mutating.Name, validating.Name)
	}
	for _, service := range []*admissionregistrationv1.ServiceReference{mutating.Webhooks[0].ClientConfig.Service, validating.Webhooks[0].ClientConfig.Service} {
		service.Namespace, service.Name, service.Port = o.Namespace, o.ServiceName, ptr.To(int32(o.Port))
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.SecretName, Namespace: o.Namespace}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: o.ServiceName, Namespace: o.Namespace},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
		},
		mutating,
		validating,
	}
	for _, object := range objects {
		if err := c.Create(ctx, object); err != nil {
			t.Fatalf("creating %T %s: %v", object, object.GetName(), err)
		}
	}
	return mutating.DeepCopy(), validating.DeepCopy()
}

// sameRegistration fails the test when the webhook changed what the release's configurations
// say about what is sent to it: the release ships the rules the webhook writes, so that nothing
// is admitted unchecked before it runs, and an upgrade of either must keep them the same.
func sameRegistration(t *testing.T, c client.Client, installedMutating *admissionregistrationv1.MutatingWebhookConfiguration, installedValidating *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(installedMutating), mutating); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(installedValidating), validating); err != nil {
		t.Fatal(err)
	}
	type registration struct {
		Rules              []admissionregistrationv1.RuleWithOperations
		NamespaceSelector  *metav1.LabelSelector
		MatchConditions    []admissionregistrationv1.MatchCondition
		Path               *string
		ReinvocationPolicy *admissionregistrationv1.ReinvocationPolicyType
	}
	for _, tc := range []struct {
		name      string
		got, want registration
	}{{
		name: "mutating",
		got: registration{mutating.Webhooks[0].Rules, mutating.Webhooks[0].NamespaceSelector, mutating.Webhooks[0].MatchConditions,
			mutating.Webhooks[0].ClientConfig.Service.Path, mutating.Webhooks[0].ReinvocationPolicy},
		want: registration{installedMutating.Webhooks[0].Rules, installedMutating.Webhooks[0].NamespaceSelector, installedMutating.Webhooks[0].MatchConditions,
			installedMutating.Webhooks[0].ClientConfig.Service.Path, installedMutating.Webhooks[0].ReinvocationPolicy},
	}, {
		name: "validating",
		got: registration{validating.Webhooks[0].Rules, validating.Webhooks[0].NamespaceSelector, validating.Webhooks[0].MatchConditions,
			validating.Webhooks[0].ClientConfig.Service.Path, nil},
		want: registration{installedValidating.Webhooks[0].Rules, installedValidating.Webhooks[0].NamespaceSelector, installedValidating.Webhooks[0].MatchConditions,
			installedValidating.Webhooks[0].ClientConfig.Service.Path, nil},
	}} {
		// The apiserver defaults each rule's scope; the webhook writes none.
		for _, rules := range [][]admissionregistrationv1.RuleWithOperations{tc.got.Rules, tc.want.Rules} {
			for i := range rules {
				rules[i].Scope = nil
			}
		}
		if !equality.Semantic.DeepEqual(tc.got, tc.want) {
			t.Errorf("the webhook registered itself in the %s configuration as\n  %+v\nnot as config/webhook does\n  %+v", tc.name, tc.got, tc.want)
		}
	}
}

// waitForRegistration waits for the certificate, for both configurations to carry rules and
// the CA, and for the apiserver to call the webhook; it returns the certificate Secret.
func waitForRegistration(t *testing.T, c client.Client, o webhook.Options) *corev1.Secret {
	t.Helper()
	ctx := t.Context()
	secret := &corev1.Secret{}
	// Generous: certificate generation and the apiserver's pickup are slow on a loaded CI box.
	eventually.Holds(t, "the webhook is registered", func() (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.SecretName}, secret); err != nil || len(secret.Data[certresources.CACert]) == 0 {
			return false, "the Secret has no CA certificate yet", nil
		}
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: o.MutatingWebhookConfiguration}, mutating); err != nil ||
			len(mutating.Webhooks[0].Rules) == 0 || len(mutating.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, "the MutatingWebhookConfiguration has no rules or CA bundle yet", nil
		}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: o.ValidatingWebhookConfiguration}, validating); err != nil ||
			len(validating.Webhooks[0].Rules) == 0 || len(validating.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, "the ValidatingWebhookConfiguration has no rules or CA bundle yet", nil
		}
		// The apiserver picks configurations up asynchronously: probe until it calls us.
		err := c.Create(ctx, queueProducer("probe", "not-a-queue"), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "denied the request") {
			return false, "the apiserver does not call the webhook yet: " + errString(err), nil
		}
		// The mutating configuration is watched separately from the validating one.
		defaulted := scheduleProducer("probe-defaults", nil)
		if err := c.Create(ctx, defaulted, client.DryRunAll); err != nil || defaulted.Spec.ScheduleSpec.Timezone == nil {
			return false, "the apiserver does not call the defaulting webhook yet: " + errString(err), nil
		}
		return true, "", nil
	}, eventually.Timeout(2*time.Minute))
	return secret
}

func errString(err error) string {
	if err == nil {
		return "the probe was admitted"
	}
	return err.Error()
}
