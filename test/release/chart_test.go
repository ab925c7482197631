package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"karpenter.sh/karpenter/pkg/test/environment"
)

var chart = filepath.Join(repositoryRoot, "charts", "karpenter")

// helm runs helm at the pinned version (hack/helm.sh builds it on first use).
func helm(args ...string) ([]byte, error) {
	command := exec.Command(filepath.Join(repositoryRoot, "hack", "helm.sh"), args...)
	var stderr bytes.Buffer
	command.Stderr = &stderr
	out, err := command.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func helmTemplate(t *testing.T, namespace string, values ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "karpenter", chart, "--namespace", namespace, "--include-crds"}
	for _, value := range values {
		args = append(args, "--set", value)
	}
	out, err := helm(args...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

func key(object *unstructured.Unstructured) string {
	return strings.TrimPrefix(fmt.Sprintf("%s %s/%s", object.GetKind(), object.GetNamespace(), object.GetName()), "/")
}

// testImage is the image the chart tests name: the chart has no default.
const testImage = "registry.example/karpenter"

// helmOnlyLabels are the labels Helm's conventions add to what the chart templates; the
// kustomize release has none of them.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

func withoutHelmLabels(object *unstructured.Unstructured) *unstructured.Unstructured {
	labels := object.GetLabels()
	for _, label := range helmOnlyLabels {
		delete(labels, label)
	}
	object.SetLabels(labels)
	if len(labels) == 0 {
		unstructured.RemoveNestedField(object.Object, "metadata", "labels")
	}
	return object
}

// TestChartRendersTheRelease holds the chart with its default values to the kustomize release:
// the same objects, field for field, but the Namespace (`helm install --create-namespace`
// creates it) and Helm's own labels. The ServiceMonitor, opt-in in both, is config/monitoring's.
func TestChartRendersTheRelease(t *testing.T) {
	t.Parallel()
	want := map[string]*unstructured.Unstructured{}
	for _, object := range decode(t, renderImage(t, "v0.0.0-test", testImage)) {
		if object.GetKind() != "Namespace" {
			want[key(object)] = object
		}
	}
	got := map[string]*unstructured.Unstructured{}
	for _, object := range helmTemplate(t, namespace, "controller.image.repository="+testImage, "controller.image.tag=v0.0.0-test") {
		// `helm test`'s pods are the chart's alone.
		if _, hook := object.GetAnnotations()["helm.sh/hook"]; !hook {
			got[key(object)] = withoutHelmLabels(object)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart renders other objects than config/ (-release +chart):\n%s", diff)
	}

	monitor := decode(t, readFile(t, filepath.Join(repositoryRoot, "config", "monitoring", "servicemonitor.yaml")))
	var monitors []*unstructured.Unstructured
	for _, object := range helmTemplate(t, namespace, "serviceMonitor.enabled=true", "controller.image.repository="+testImage) {
		if object.GetKind() == "ServiceMonitor" {
			monitors = append(monitors, withoutHelmLabels(object))
		}
	}
	if diff := cmp.Diff(monitor, monitors); diff != "" {
		t.Errorf("serviceMonitor.enabled renders another ServiceMonitor than config/monitoring (-config +chart):\n%s", diff)
	}
}

// TestChartValuesReachTheDeployments checks the values users set most, and the image by digest.
func TestChartValuesReachTheDeployments(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("0", 64)
	objects := helmTemplate(t, "kube-system",
		"controller.image.repository=registry.example/karpenter", "controller.image.tag=v9.9.9", "controller.image.digest="+digest,
		"settings.clusterName=prod", "settings.clusterEndpoint=https://example.eks.amazonaws.com",
		"settings.aws.defaultInstanceProfile=KarpenterNode", "settings.bindPods=false", "logLevel=debug", "replicas=3",
		`serviceAccount.annotations.eks\.amazonaws\.com/role-arn=arn:aws:iam::111122223333:role/Karpenter`,
		"nodeSelector.role=system", "controller.resources.limits.memory=2Gi")
	for _, object := range objects {
		if object.GetKind() != "CustomResourceDefinition" && object.GetNamespace() != "" && object.GetNamespace() != "kube-system" {
			t.Errorf("%s is not in the release's namespace", key(object))
		}
		for _, subject := range nested[[]any](object, "subjects") {
			if namespace, _ := subject.(map[string]any)["namespace"]; namespace != "kube-system" {
				t.Errorf("%s binds a service account of namespace %v", key(object), namespace)
			}
		}
		for _, webhook := range nested[[]any](object, "webhooks") {
			service, _, _ := unstructured.NestedString(webhook.(map[string]any), "clientConfig", "service", "namespace")
			if service != "kube-system" {
				t.Errorf("%s calls a Service in namespace %s", key(object), service)
			}
		}
	}
	find := func(kind, name string) *unstructured.Unstructured {
		for _, object := range objects {
			if object.GetKind() == kind && object.GetName() == name {
				return object
			}
		}
		t.Fatalf("no %s %s", kind, name)
		return nil
	}
	if annotation := find("ServiceAccount", "karpenter").GetAnnotations()["eks.amazonaws.com/role-arn"]; annotation != "arn:aws:iam::111122223333:role/Karpenter" {
		t.Errorf("the ServiceAccount's role-arn annotation is %q", annotation)
	}
	controller := find("Deployment", "karpenter")
	if replicas, _, _ := unstructured.NestedFieldNoCopy(controller.Object, "spec", "replicas"); fmt.Sprint(replicas) != "3" {
		t.Errorf("controller replicas %v, want 3", replicas)
	}
	if selector, _, _ := unstructured.NestedStringMap(controller.Object, "spec", "template", "spec", "nodeSelector"); selector["role"] != "system" {
		t.Errorf("controller nodeSelector %v", selector)
	}
	containers, _, _ := unstructured.NestedSlice(controller.Object, "spec", "template", "spec", "containers")
	container := containers[0].(map[string]any)
	if image := container["image"]; image != "registry.example/karpenter:v9.9.9@"+digest {
		t.Errorf("controller image %v", image)
	}
	for name, want := range map[string]string{"CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "AWS_DEFAULT_INSTANCE_PROFILE": "KarpenterNode", "BIND_PODS": "false", "LOG_LEVEL": "debug"} {
		if got := envOf(container, name); got != want {
			t.Errorf("controller %s=%q, want %q", name, got, want)
		}
	}
	if memory, _, _ := unstructured.NestedString(container, "resources", "limits", "memory"); memory != "2Gi" {
		t.Errorf("controller memory limit %s, want 2Gi", memory)
	}
}

// TestChartRefusesBadValues: values.schema.json fails the install and names the value.
func TestChartRefusesBadValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ set, want string }{
		{"controller.image.digest=latest", "digest"},
		{"controller.image.repository=public.ecr.aws/karpenter/controller", "another project's binary"},
		{"controller.image.repository=,image.repository=public.ecr.aws/karpenter/karpenter", "another project's binary"},
		{"webhook.image=public.ecr.aws/karpenter/webhook:v0.5.6", "another project's binary"},
		{"settings.vmMemoryOverheadPercent=7.5", "vmMemoryOverheadPercent"},
		{"logLevel=verbose", "logLevel"},
		{"replicas=0", "replicas"},
		{"settings.clusterNam=prod", "clusterNam"},
		{"image.digest=latest", "digest"},
		{"controller.resources.limits.memory=lots", "memory"},
		{"settings.aws.region=Oregon", "region"},
		{"settings.bindPods=sometimes", "bindPods"},
	} {
		_, err := helm("template", "karpenter", chart, "--set", "controller.image.repository="+testImage, "--set", c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: %v, want an error naming %s", c.set, err, c.want)
		}
	}
}

// TestChartInstallsWithRBAC installs the chart with helm into a real kube-apiserver and asks it
// the release's SubjectAccessReview questions.
func TestChartInstallsWithRBAC(t *testing.T) {
	t.Parallel()
	env := environment.New(t, environment.Options{})
	if _, err := helm("install", "karpenter", chart, "--kubeconfig", env.KubeconfigPath,
		"--namespace", namespace, "--create-namespace", "--set", "controller.image.repository="+testImage); err != nil {
		t.Fatal(err)
	}
	checkRBAC(t, env)
}

func nested[T any](object *unstructured.Unstructured, field string) T {
	value, _ := object.Object[field].(T)
	return value
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
