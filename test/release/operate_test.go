package release

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// TestNamespaceUsersManageKarpenterKindsWithBuiltInRoles installs the chart and binds users of
// a team's namespace to Kubernetes' built-in admin, edit and view roles: through the chart's
// aggregated ClusterRoles, admin and edit may manage the namespaced Karpenter kinds there and
// view may read them.
func TestNamespaceUsersManageKarpenterKindsWithBuiltInRoles(t *testing.T) {
	t.Parallel()
	env := environment.New(t, environment.Options{ControllerManager: true})
	helmInstall(t, env, false, "--set", "controller.image.repository="+testImage)
	for _, role := range []string{"admin", "edit", "view"} {
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: role + "-user"}},
		}
		if err := env.Client.Create(t.Context(), binding); err != nil {
			t.Fatal(err)
		}
	}
	for _, resource := range []string{"horizontalautoscalers", "metricsproducers", "scalablenodegroups"} {
		for _, c := range []struct {
			user, verb string
			allowed    bool
		}{
			{"admin-user", "delete", true}, {"admin-user", "create", true},
			{"edit-user", "create", true}, {"edit-user", "patch", true},
			{"view-user", "list", true}, {"view-user", "create", false},
		} {
			a := access{verb: c.verb, group: "autoscaling.karpenter.sh", resource: resource, namespace: "default"}
			// The controller-manager aggregates the roles a moment after the install.
			eventually.Holds(t, fmt.Sprintf("%s may %s: %t", c.user, a, c.allowed), func() (bool, string, error) {
				return allowed(t, env, c.user, a) == c.allowed, "", nil
			}, eventually.Timeout(time.Minute))
		}
	}
}

// TestCRDChartOwnsTheCRDsAndUpgradesThem installs the karpenter-crd chart over CRDs an earlier
// install left (taking them over, as upstream's chart is used), upgrades it, and installs the
// main chart without its own copy of the CRDs.
func TestCRDChartOwnsTheCRDsAndUpgradesThem(t *testing.T) {
	t.Parallel()
	crdChart := filepath.Join(repositoryRoot, "charts", "karpenter-crd")
	env := environment.New(t, environment.Options{})
	for _, command := range [][]string{
		{"install", "karpenter-crd", crdChart, "--take-ownership"},
		{"upgrade", "karpenter-crd", crdChart},
	} {
		if _, err := helm(append(command, "--kubeconfig", env.KubeconfigPath, "--namespace", namespace, "--create-namespace")...); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "get", "crds", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.meta\.helm\.sh/release-name}{"\n"}{end}`).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	crds, err := filepath.Glob(filepath.Join(repositoryRoot, "config", "crd", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(crd), ".yaml"), "_")
		if name := plural + "." + group; !strings.Contains(string(out), name+"=karpenter-crd\n") {
			t.Errorf("CRD %s is not the karpenter-crd release's:\n%s", name, out)
		}
	}
	helmInstall(t, env, false, "--set", "controller.image.repository="+testImage, "--skip-crds")
}

// TestHelmTestChecksTheControllerAndTheWebhook: `helm test` runs hook pods, in the release's own
// image, that pass once the controller is ready and the webhook answers.
func TestHelmTestChecksTheControllerAndTheWebhook(t *testing.T) {
	t.Parallel()
	out, err := helm("template", "karpenter", chart, "--namespace", namespace, "--set", "controller.image.repository="+testImage)
	if err != nil {
		t.Fatal(err)
	}
	var probes []string
	for _, object := range decode(t, out) {
		if object.GetKind() == "Pod" && object.GetAnnotations()["helm.sh/hook"] == "test" {
			probes = append(probes, yamlOf(field(object, "spec.containers")))
		}
	}
	for _, want := range []string{"karpenter.karpenter.svc", "karpenter-webhook.karpenter.svc"} {
		if !strings.Contains(strings.Join(probes, "\n"), want) {
			t.Errorf("no helm test pod probes %s; the test pods:\n%s", want, strings.Join(probes, "\n---\n"))
		}
	}
	for _, probe := range probes {
		if !strings.Contains(probe, "image: "+testImage+":") {
			t.Errorf("a helm test pod does not run the release's image:\n%s", probe)
		}
	}
}

// TestPackagedChartNamesItsImageByDigest packages the chart as `make release` does: the package
// renders with no values at all, naming the image it was given by digest.
func TestPackagedChartNamesItsImageByDigest(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("a", 64)
	dir := t.TempDir()
	command := exec.Command(filepath.Join(repositoryRoot, "hack", "package-chart.sh"), "v9.8.7", testImage, digest, dir)
	if out, err := command.CombinedOutput(); err != nil {
		t.Fatalf("hack/package-chart.sh: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "karpenter-9.8.7.tgz")); err != nil {
		t.Fatal(err)
	}
	out, err := helm("template", "karpenter", filepath.Join(dir, "karpenter-9.8.7.tgz"), "--namespace", namespace)
	if err != nil {
		t.Fatal(err)
	}
	release := rendered{objects: decode(t, out)}
	for _, name := range []string{"karpenter", "karpenter-webhook"} {
		if image := field(release.get(t, "Deployment", name), "spec.template.spec.containers.0.image"); image != testImage+":v9.8.7@"+digest {
			t.Errorf("Deployment %s of the packaged chart runs %v, want %s:v9.8.7@%s", name, image, testImage, digest)
		}
	}
}
