package sandbox

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWebhookInstallIsTheReleasesPointedAtLoopback renders the release as `make release` does
// and checks what the sandbox takes from it: the Deployment's flags with only the port and log
// format changed, the objects those flags name, the Service resolving to localhost and every
// webhook pointed at the loopback port.
func TestWebhookInstallIsTheReleasesPointedAtLoopback(t *testing.T) {
	release := renderRelease(t)
	install, err := webhookInstallOf(release, 12345)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--port=12345", "--log-format=console", "--service-name=karpenter-webhook", "--secret-name=karpenter-webhook-cert",
		"--defaulting-webhook-name=defaulting.webhook.karpenter.sh", "--validation-webhook-name=validation.webhook.karpenter.sh",
	} {
		if !slices.Contains(install.args, want) {
			t.Errorf("args %q lack %s", install.args, want)
		}
	}
	if install.namespace != "karpenter" || install.validatingWebhook != "validation.webhook.karpenter.sh" {
		t.Errorf("namespace %q, validating webhook %q", install.namespace, install.validatingWebhook)
	}
	var got []string
	for _, object := range install.objects {
		got = append(got, object.GetKind()+" "+object.GetName())
		switch object.GetKind() {
		case "Service":
			if spec, _, _ := unstructured.NestedStringMap(object.Object, "spec"); spec["type"] != "ExternalName" || spec["externalName"] != "localhost" {
				t.Errorf("Service spec %v, want an ExternalName for localhost", object.Object["spec"])
			}
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			webhooks, _, _ := unstructured.NestedSlice(object.Object, "webhooks")
			for _, webhook := range webhooks {
				service, _, _ := unstructured.NestedMap(webhook.(map[string]any), "clientConfig", "service")
				if service["port"] != int64(12345) || service["name"] != "karpenter-webhook" || service["namespace"] != "karpenter" {
					t.Errorf("%s clientConfig.service %v, want karpenter/karpenter-webhook port 12345", object.GetName(), service)
				}
			}
		}
	}
	want := []string{
		"Namespace karpenter", "Secret karpenter-webhook-cert", "Service karpenter-webhook",
		"MutatingWebhookConfiguration defaulting.webhook.karpenter.sh", "ValidatingWebhookConfiguration validation.webhook.karpenter.sh",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("objects %q, want %q", got, want)
	}
}

func TestWebhookInstallOfAnIncompleteReleaseSaysWhatIsMissing(t *testing.T) {
	release := renderRelease(t)
	for _, c := range []struct {
		name   string
		modify func([]*unstructured.Unstructured) []*unstructured.Unstructured
		want   string
	}{
		{"no webhook Deployment", without("Deployment", "karpenter-webhook"), `the release has no Deployment "karpenter/karpenter-webhook"`},
		{"no Secret", without("Secret", "karpenter-webhook-cert"), `the release has no Secret "karpenter/karpenter-webhook-cert"`},
		{"no ValidatingWebhookConfiguration", without("ValidatingWebhookConfiguration", "validation.webhook.karpenter.sh"),
			`the release has no ValidatingWebhookConfiguration "validation.webhook.karpenter.sh"`},
		{"no --secret-name", func(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
			for _, object := range objects {
				if object.GetKind() == "Deployment" && object.GetName() == "karpenter-webhook" {
					containers, _, _ := unstructured.NestedSlice(object.Object, "spec", "template", "spec", "containers")
					container := containers[0].(map[string]any)
					container["args"] = slices.DeleteFunc(container["args"].([]any), func(arg any) bool {
						return strings.HasPrefix(arg.(string), "--secret-name=")
					})
					_ = unstructured.SetNestedSlice(object.Object, containers, "spec", "template", "spec", "containers")
				}
			}
			return objects
		}, "the webhook Deployment does not set --secret-name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			copied := make([]*unstructured.Unstructured, 0, len(release))
			for _, object := range release {
				copied = append(copied, object.DeepCopy())
			}
			_, err := webhookInstallOf(c.modify(copied), 12345)
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func without(kind, name string) func([]*unstructured.Unstructured) []*unstructured.Unstructured {
	return func(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
		return slices.DeleteFunc(objects, func(object *unstructured.Unstructured) bool {
			return object.GetKind() == kind && object.GetName() == name
		})
	}
}

func renderRelease(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	release, err := renderedRelease(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return release
}
