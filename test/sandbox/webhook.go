package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// webhookRegistrationTimeout bounds the wait for the webhook's certificate, its registration
// in both configurations and the apiserver's first calls; generous for a loaded 2-core box.
const webhookRegistrationTimeout = 2 * time.Minute

// webhookInstall is the webhook's part of a rendered release: the Deployment whose container
// flags cmd/webhook runs with, and the objects the apiserver needs to call it.
type webhookInstall struct {
	namespace string
	args      []string
	objects   []*unstructured.Unstructured
	// validatingWebhook names the validating configuration and its one webhook, as the
	// apiserver quotes it when the webhook denies a request.
	validatingWebhook string
}

// startWebhook installs the webhook's objects from the release that config/ renders (as
// `make release` renders it) and runs cmd/webhook with the flags of the release's Deployment, as
// a real process that issues its own certificate and registers its rules. Two things differ,
// because no pod runs it: the Service is an ExternalName for localhost, and the configurations'
// clientConfig.service.port is the webhook's loopback port; the apiserver still verifies the
// certificate against the Service's DNS name. It returns once the apiserver calls both the
// defaulting and the validation webhook.
func (s *Stack) startWebhook(ctx context.Context) error {
	begin := time.Now()
	address, err := environment.FreeAddress()
	if err != nil {
		return err
	}
	_, portText, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("the webhook's address %s, %w", address, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("the webhook's port in %s, %w", address, err)
	}
	release, err := renderedRelease(ctx)
	if err != nil {
		return err
	}
	install, err := webhookInstallOf(release, port)
	if err != nil {
		return err
	}
	for _, object := range install.objects {
		if err := s.Env.Client.Patch(ctx, object, client.Apply, client.FieldOwner("sandbox"), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing the webhook's %s %s, %w", object.GetKind(), object.GetName(), err)
		}
	}
	proc, err := s.Env.StartProcess(ctx, environment.ProcessOptions{
		Name: "webhook",
		Path: s.options.WebhookBinary,
		Args: install.args,
		Env: []string{
			"KUBECONFIG=" + s.Env.KubeconfigPath,
			// The Deployment sets it from the pod's namespace.
			"SYSTEM_NAMESPACE=" + install.namespace,
		},
	})
	if err != nil {
		return err
	}
	if err := waitForAdmission(ctx, s.Env.Client, proc, install.validatingWebhook); err != nil {
		return err
	}
	s.options.Logf("sandbox: webhook registered and called by the apiserver in %s", time.Since(begin).Round(time.Millisecond))
	return nil
}

// renderedRelease is the release of config/ as `make release` renders it (hack/release.sh).
func renderedRelease(ctx context.Context) ([]*unstructured.Unstructured, error) {
	root, err := environment.RepositoryRoot()
	if err != nil {
		return nil, err
	}
	command := exec.CommandContext(ctx, filepath.Join(root, "hack", "release.sh"), "v0.0.0-sandbox") //nolint:gosec // G204: the repository's own script.
	var stderr bytes.Buffer
	command.Stderr = &stderr
	manifest, err := command.Output()
	if err != nil {
		return nil, fmt.Errorf("rendering the release with hack/release.sh, %w\n%s", err, stderr.String())
	}
	objects, err := manifests.DecodeAll(bytes.NewReader(manifest))
	if err != nil {
		return nil, fmt.Errorf("decoding the rendered release, %w", err)
	}
	return objects, nil
}

// webhookInstallOf finds the webhook's Deployment in a release and the objects its flags name,
// pointed at port on loopback.
func webhookInstallOf(release []*unstructured.Unstructured, port int) (*webhookInstall, error) {
	find := func(kind, namespace, name string) (*unstructured.Unstructured, error) {
		for _, object := range release {
			if object.GetKind() == kind && object.GetNamespace() == namespace && object.GetName() == name {
				return object.DeepCopy(), nil
			}
		}
		return nil, fmt.Errorf("the release has no %s %q", kind, strings.TrimPrefix(namespace+"/"+name, "/"))
	}
	deploymentObject, err := find("Deployment", "karpenter", "karpenter-webhook")
	if err != nil {
		return nil, err
	}
	var deployment appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deploymentObject.Object, &deployment); err != nil {
		return nil, fmt.Errorf("reading the webhook Deployment, %w", err)
	}
	if len(deployment.Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("the webhook Deployment has %d containers, want 1", len(deployment.Spec.Template.Spec.Containers))
	}
	install := &webhookInstall{namespace: deployment.Namespace}
	flags := map[string]string{}
	for _, arg := range deployment.Spec.Template.Spec.Containers[0].Args {
		name, value, _ := strings.Cut(arg, "=")
		flags[name] = value
		switch name {
		case "--port":
			arg = fmt.Sprintf("--port=%d", port)
		case "--log-format":
			// Read by people in .sandbox/state/logs, like the controller's.
			arg = "--log-format=console"
		}
		install.args = append(install.args, arg)
	}
	for _, name := range []string{"--port", "--service-name", "--secret-name", "--defaulting-webhook-name", "--validation-webhook-name"} {
		if flags[name] == "" {
			return nil, fmt.Errorf("the webhook Deployment does not set %s", name)
		}
	}
	install.validatingWebhook = flags["--validation-webhook-name"]

	namespace, err := find("Namespace", "", install.namespace)
	if err != nil {
		return nil, err
	}
	secret, err := find("Secret", install.namespace, flags["--secret-name"])
	if err != nil {
		return nil, err
	}
	service, err := find("Service", install.namespace, flags["--service-name"])
	if err != nil {
		return nil, err
	}
	// No pod backs the Service: the apiserver resolves an ExternalName Service to its name and
	// the webhook configuration's port.
	service.Object["spec"] = map[string]any{"type": "ExternalName", "externalName": "localhost"}
	install.objects = append(install.objects, namespace, secret, service)
	for kind, name := range map[string]string{
		"MutatingWebhookConfiguration":   flags["--defaulting-webhook-name"],
		"ValidatingWebhookConfiguration": flags["--validation-webhook-name"],
	} {
		configuration, err := find(kind, "", name)
		if err != nil {
			return nil, err
		}
		if err := setServicePort(configuration, port); err != nil {
			return nil, err
		}
		install.objects = append(install.objects, configuration)
	}
	return install, nil
}

// setServicePort points every webhook of a configuration at port of its Service.
func setServicePort(configuration *unstructured.Unstructured, port int) error {
	webhooks, _, err := unstructured.NestedSlice(configuration.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("reading the webhooks of %s %s, %w", configuration.GetKind(), configuration.GetName(), err)
	}
	if len(webhooks) == 0 {
		return fmt.Errorf("%s %s has no webhooks", configuration.GetKind(), configuration.GetName())
	}
	for i := range webhooks {
		webhook, ok := webhooks[i].(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: webhooks[%d] is not an object", configuration.GetKind(), configuration.GetName(), i)
		}
		if err := unstructured.SetNestedField(webhook, int64(port), "clientConfig", "service", "port"); err != nil {
			return fmt.Errorf("%s %s: webhooks[%d], %w", configuration.GetKind(), configuration.GetName(), i, err)
		}
	}
	return unstructured.SetNestedSlice(configuration.Object, webhooks, "webhooks")
}

// waitForAdmission polls with dry-run creates until the apiserver calls both webhooks: an
// autoscaler without behavior comes back defaulted, one with a bad query is denied. The
// apiserver picks up each configuration on its own watch, after the webhook filled in its
// rules and CA bundle.
func waitForAdmission(ctx context.Context, c client.Client, webhook *environment.Process, validatingWebhook string) error {
	ctx, cancel := context.WithTimeout(ctx, webhookRegistrationTimeout)
	defer cancel()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		if last = admits(ctx, c, validatingWebhook); last == nil {
			return nil
		}
		select {
		case <-webhook.Exited():
			return fmt.Errorf("the webhook exited before the apiserver called it, see %s", webhook.LogPath())
		case <-ctx.Done():
			return fmt.Errorf("the apiserver did not call the webhook within %s (%w), see %s", webhookRegistrationTimeout, last, webhook.LogPath())
		case <-ticker.C:
		}
	}
}

// admits is nil once both webhooks answer the apiserver.
func admits(ctx context.Context, c client.Client, validatingWebhook string) error {
	defaulted := admissionProbe("sum(up)")
	if err := c.Create(ctx, defaulted, client.DryRunAll); err != nil {
		return fmt.Errorf("a good HorizontalAutoscaler is not admitted yet, %w", err)
	}
	if defaulted.Spec.Behavior.ScaleUp == nil || defaulted.Spec.Behavior.ScaleDown == nil {
		return errors.New("the defaulting webhook is not called yet")
	}
	err := c.Create(ctx, admissionProbe("sum(up"), client.DryRunAll)
	switch {
	case err == nil:
		return errors.New("the validation webhook is not called yet: a bad query is admitted")
	case !strings.Contains(err.Error(), fmt.Sprintf("admission webhook %q denied the request", validatingWebhook)):
		return fmt.Errorf("the validation webhook is not called yet, %w", err)
	}
	return nil
}

// admissionProbe is a HorizontalAutoscaler that only a dry run creates.
func admissionProbe(query string) *v1alpha1.HorizontalAutoscaler {
	return &v1alpha1.HorizontalAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-admission-probe", Namespace: Namespace},
		Spec: v1alpha1.HorizontalAutoscalerSpec{
			ScaleTargetRef: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "probe"},
			MaxReplicas:    1,
			Metrics: []v1alpha1.Metric{{Prometheus: &v1alpha1.PrometheusMetricSource{
				Query:  query,
				Target: v1alpha1.MetricTarget{Type: v1alpha1.ValueMetricType, Value: resource.MustParse("1")},
			}}},
		},
	}
}
