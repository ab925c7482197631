// Package release tests the install: config/ renders into a release, the release is accepted
// by a real kube-apiserver, and the RBAC it grants is what the reconcilers and the webhook need
// and nothing more.
package release

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/test/environment"
)

const namespace = "karpenter"

// repositoryRoot is two levels up: go test runs in test/release.
var repositoryRoot = filepath.Join("..", "..")

// render runs the release renderer exactly as `make release` does, the image pinned to digest
// when one is given.
func render(t *testing.T, version string, digest ...string) []byte {
	t.Helper()
	return renderImage(t, version, "public.ecr.aws/karpenter/karpenter", digest...)
}

// renderImage renders the release for the image repository given.
func renderImage(t *testing.T, version, repository string, digest ...string) []byte {
	t.Helper()
	command := exec.Command(filepath.Join(repositoryRoot, "hack", "release.sh"), append([]string{version, repository}, digest...)...)
	var stderr bytes.Buffer
	command.Stderr = &stderr
	out, err := command.Output()
	if err != nil {
		t.Fatalf("hack/release.sh %s: %v\n%s", version, err, stderr.String())
	}
	return out
}

func decode(t *testing.T, manifest []byte) []*unstructured.Unstructured {
	t.Helper()
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objects []*unstructured.Unstructured
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objects
			}
			t.Fatalf("decoding the release, %v", err)
		}
		if len(object.Object) > 0 {
			objects = append(objects, object)
		}
	}
}

// committedReleases are releases/aws/v*.yaml, oldest first.
func committedReleases(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repositoryRoot, "releases", "aws", "v*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no release in releases/aws (%v); run make release VERSION=...", err)
	}
	sort.Slice(paths, func(i, j int) bool { return semverLess(versionOf(paths[i]), versionOf(paths[j])) })
	return paths
}

func versionOf(path string) string { return strings.TrimSuffix(filepath.Base(path), ".yaml") }

// semverLess orders vMAJOR.MINOR.PATCH numerically; a pre-release sorts before its release.
func semverLess(a, b string) bool {
	var x, y [3]int
	var preA, preB string
	// A malformed version parses as far as it goes; the release test names it when it sorts oddly.
	_, _ = fmt.Sscanf(strings.SplitN(a, "-", 2)[0], "v%d.%d.%d", &x[0], &x[1], &x[2])
	_, _ = fmt.Sscanf(strings.SplitN(b, "-", 2)[0], "v%d.%d.%d", &y[0], &y[1], &y[2])
	if i := strings.Index(a, "-"); i >= 0 {
		preA = a[i:]
	}
	if i := strings.Index(b, "-"); i >= 0 {
		preB = b[i:]
	}
	if x != y {
		return slices.Compare(x[:], y[:]) < 0
	}
	return preA != "" && (preB == "" || preA < preB)
}

// TestKustomizationListsEveryCRD guards against a new CRD in config/crd that the install omits.
func TestKustomizationListsEveryCRD(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repositoryRoot, "config", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatal(err)
	}
	crds, err := filepath.Glob(filepath.Join(repositoryRoot, "config", "crd", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in config/crd (%v)", err)
	}
	for _, crd := range crds {
		if name := "crd/" + filepath.Base(crd); !slices.Contains(kustomization.Resources, name) {
			t.Errorf("config/kustomization.yaml does not list %s", name)
		}
	}
}

// TestNewestReleaseIsRenderedFromConfig fails when config/ changed after the newest release in
// releases/aws was rendered: that file must be what `make release` produces, never a hand edit.
func TestNewestReleaseIsRenderedFromConfig(t *testing.T) {
	releases := committedReleases(t)
	newest := releases[len(releases)-1]
	committed, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	// The digest is of the image `make release` built; the manifest must name one.
	digest := regexp.MustCompile(`@(sha256:[0-9a-f]{64})\n`).FindSubmatch(committed)
	if digest == nil {
		t.Fatalf("%s names no image digest; run `make release VERSION=%s`", newest, versionOf(newest))
	}
	if rendered := render(t, versionOf(newest), string(digest[1])); !bytes.Equal(committed, rendered) {
		t.Errorf("%s differs from what config/ renders; run `make release VERSION=%s` and commit it",
			newest, versionOf(newest))
	}
}

// TestReleaseInstalls applies every committed release and then the current config/, in order
// as upgrades do, to a real kube-apiserver with `kubectl apply --server-side`, and checks that
// what they create is admitted and secure.
func TestReleaseInstalls(t *testing.T) {
	t.Parallel()
	env := environment.New(t, environment.Options{})
	ctx := t.Context()

	current := filepath.Join(t.TempDir(), "current.yaml")
	manifest := render(t, "v0.0.0-test")
	if err := os.WriteFile(current, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range append(committedReleases(t), current) {
		apply(t, env, path)
	}
	// Applying again changes nothing and conflicts with nothing.
	apply(t, env, current)

	objects := decode(t, manifest)
	for _, object := range objects {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(object.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(object), live); err != nil {
			t.Errorf("%s %s was applied but cannot be read back, %v", object.GetKind(), object.GetName(), err)
		}
	}

	var deployments []appsv1.Deployment
	var budgets []policyv1.PodDisruptionBudget
	for _, object := range objects {
		switch object.GetKind() {
		case "Deployment":
			var deployment appsv1.Deployment
			convert(t, object, &deployment)
			deployments = append(deployments, deployment)
		case "PodDisruptionBudget":
			var budget policyv1.PodDisruptionBudget
			convert(t, object, &budget)
			budgets = append(budgets, budget)
		}
	}
	if len(deployments) != 2 {
		t.Fatalf("the release has %d Deployments, want the controller and the webhook", len(deployments))
	}
	for _, deployment := range deployments {
		t.Run(deployment.Name, func(t *testing.T) {
			checkDeployment(t, deployment, budgets)
			// The apiserver's PodSecurity admission enforces the restricted standard the
			// namespace declares, and the Priority admission resolves the priority class.
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: deployment.Name + "-", Labels: deployment.Spec.Template.Labels},
				Spec:       deployment.Spec.Template.Spec,
			}
			if err := env.Client.Create(ctx, pod, client.DryRunAll); err != nil {
				t.Errorf("a pod of %s is not admitted in namespace %s, %v", deployment.Name, namespace, err)
			}
		})
	}
}

func apply(t *testing.T, env *environment.Environment, path string) {
	t.Helper()
	command := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "apply", "--server-side", "-f", path)
	if out, err := command.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --server-side -f %s: %v\n%s", filepath.Base(path), err, out)
	}
}

func convert(t *testing.T, object *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, into); err != nil {
		t.Fatalf("converting %s %s, %v", object.GetKind(), object.GetName(), err)
	}
}

// checkDeployment holds what the apiserver does not enforce: high availability, bounded
// resources, probes and an immutable root filesystem.
func checkDeployment(t *testing.T, deployment appsv1.Deployment, budgets []policyv1.PodDisruptionBudget) {
	if replicas := deployment.Spec.Replicas; replicas == nil || *replicas < 2 {
		t.Errorf("replicas = %v, want at least 2", replicas)
	}
	podLabels := labels.Set(deployment.Spec.Template.Labels)
	if !slices.ContainsFunc(budgets, func(b policyv1.PodDisruptionBudget) bool {
		selector, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		return err == nil && selector.Matches(podLabels)
	}) {
		t.Errorf("no PodDisruptionBudget selects its pods")
	}
	if len(deployment.Spec.Template.Spec.TopologySpreadConstraints) == 0 {
		t.Errorf("no topology spread constraints")
	}
	for _, container := range deployment.Spec.Template.Spec.Containers {
		if !regexp.MustCompile(`:v0\.0\.0-test$`).MatchString(container.Image) {
			t.Errorf("container %s image %q is not tagged with the rendered version", container.Name, container.Image)
		}
		security := container.SecurityContext
		if security == nil || security.ReadOnlyRootFilesystem == nil || !*security.ReadOnlyRootFilesystem {
			t.Errorf("container %s root filesystem is writable", container.Name)
		}
		for _, resource := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := container.Resources.Requests[resource]; !ok {
				t.Errorf("container %s requests no %s", container.Name, resource)
			}
			if _, ok := container.Resources.Limits[resource]; !ok {
				t.Errorf("container %s has no %s limit", container.Name, resource)
			}
		}
		if container.LivenessProbe == nil || container.ReadinessProbe == nil {
			t.Errorf("container %s lacks a liveness or readiness probe", container.Name)
		}
	}
}
