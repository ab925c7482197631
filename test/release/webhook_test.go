package release

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/system"
	certresources "knative.dev/pkg/webhook/certificates/resources"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/webhook"
)

// TestWebhookRunsWithTheReleaseRBAC installs the release and runs the webhook as its service
// account with the flags of its Deployment: with any permission missing its informers would
// not sync or its writes would be refused, and it would never issue its certificate into the
// Secret or register itself in the two webhook configurations.
func TestWebhookRunsWithTheReleaseRBAC(t *testing.T) {
	env := environment.New(t, environment.Options{})
	path := filepath.Join(t.TempDir(), "current.yaml")
	manifest := render(t, "v0.0.0-test")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	apply(t, env, path)

	var deployment appsv1.Deployment
	for _, object := range decode(t, manifest) {
		if object.GetKind() == "Deployment" && object.GetName() == "karpenter-webhook" {
			convert(t, object, &deployment)
		}
	}
	if len(deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("the release has no karpenter-webhook Deployment with one container")
	}
	options := webhookOptions(t, deployment.Spec.Template.Spec.Containers[0].Args)
	options.Namespace = namespace
	options.Port = environment.FreePort(t)
	// As cmd/webhook builds it.
	ids := cloudprovider.NewRegistry()
	aws.RegisterIDs(ids)
	options.Cloud = ids

	asServiceAccount := rest.CopyConfig(env.Config)
	asServiceAccount.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + deployment.Spec.Template.Spec.ServiceAccountName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	t.Setenv(system.NamespaceEnvKey, namespace) // Run sets it; restored after the test
	// Warnings and errors are shown: a refused request shows up here first.
	ctx, cancel := context.WithCancel(logging.WithLogger(context.Background(),
		zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Sugar()))
	done := make(chan error, 1)
	go func() { done <- webhook.Run(ctx, asServiceAccount, options) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("webhook stopped with %v", err)
		}
	})

	var caBundle []byte
	// Generous: certificate generation and informer sync are slow on a loaded CI box.
	eventually.Holds(t, "the webhook registers itself as its service account", func() (bool, string, error) {
		secret := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: options.SecretName}, secret); err != nil {
			return false, "reading the Secret: " + err.Error(), nil
		}
		if len(secret.Data[certresources.CACert]) == 0 || len(secret.Data[certresources.ServerCert]) == 0 {
			return false, "the Secret holds no certificate yet", nil
		}
		caBundle = secret.Data[certresources.CACert]
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: options.ValidatingWebhookConfiguration}, validating); err != nil {
			return false, "reading the ValidatingWebhookConfiguration: " + err.Error(), nil
		}
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: options.MutatingWebhookConfiguration}, mutating); err != nil {
			return false, "reading the MutatingWebhookConfiguration: " + err.Error(), nil
		}
		for name, hooks := range map[string]int{
			"validating": registered(validating.Webhooks[0].Rules, validating.Webhooks[0].ClientConfig),
			"mutating":   registered(mutating.Webhooks[0].Rules, mutating.Webhooks[0].ClientConfig),
		} {
			if hooks == 0 {
				return false, "the " + name + " webhook has no rules or no CA bundle yet", nil
			}
		}
		return true, "", nil
	}, eventually.Timeout(2*time.Minute))

	// What the Deployment's probes ask: it serves the certificate from the Secret (read through
	// its informer) for the Service's name, and answers the kubelet.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caBundle)
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: options.ServiceName + "." + namespace + ".svc",
	}}}
	eventually.Holds(t, "the webhook answers the kubelet's probe over its certificate", func() (bool, string, error) {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", options.Port), nil)
		if err != nil {
			return false, "", err
		}
		request.Header.Set("User-Agent", "kube-probe/1.34")
		response, err := probe.Do(request)
		if err != nil {
			return false, err.Error(), nil
		}
		response.Body.Close()
		return response.StatusCode == http.StatusOK, response.Status, nil
	}, eventually.Timeout(time.Minute))
}

// registered is the number of rules of a webhook, 0 while the webhook has not written its CA
// bundle.
func registered(rules []admissionregistrationv1.RuleWithOperations, config admissionregistrationv1.WebhookClientConfig) int {
	if len(config.CABundle) == 0 {
		return 0
	}
	return len(rules)
}

// webhookOptions reads cmd/webhook's flags from the Deployment's arguments.
func webhookOptions(t *testing.T, args []string) webhook.Options {
	t.Helper()
	var options webhook.Options
	flags := map[string]*string{
		"--service-name":            &options.ServiceName,
		"--secret-name":             &options.SecretName,
		"--defaulting-webhook-name": &options.MutatingWebhookConfiguration,
		"--validation-webhook-name": &options.ValidatingWebhookConfiguration,
	}
	for _, arg := range args {
		name, value, _ := strings.Cut(arg, "=")
		if into, ok := flags[name]; ok {
			*into = value
		}
		if name == "--leader-elect" {
			options.LeaderElection = value == "true"
		}
	}
	for name, value := range flags {
		if *value == "" {
			t.Fatalf("the webhook Deployment does not set %s", name)
		}
	}
	return options
}
