package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
)

// TestPlanNamesWhatTheControllerLaunches is finding 34.17: `kubectl karpenter plan --pods`
// for a Deployment not applied yet, run as a user runs it against the sandbox, names the
// offerings (instance type, zone, capacity type) the controller then launches for it, on the
// same emulator, for spot and for on-demand. Every instance type is allowed, as in the
// sandbox run that found it, so that offerings of equal price compete: t3.small and t3a.small
// spot cost the same in us-west-2a, and an on-demand type costs the same in every zone.
func TestPlanNamesWhatTheControllerLaunches(t *testing.T) {
	t.Parallel()
	plugin := buildPlugin(t)
	for _, capacityType := range []string{v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand} {
		t.Run(capacityType, func(t *testing.T) {
			name := "plan-" + capacityType
			createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
				{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{capacityType}},
			}})
			// Each 1-CPU pod takes a node of its own on the cheapest types: one launch of three.
			deployment := builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: 3, Pod: builders.PodOptions{
				NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", "1", "memory", "1Gi"),
			}})
			report := runPlan(t, plugin, deployment)
			var planned []string
			for _, n := range report.NewNodes {
				planned = append(planned, offering(n.InstanceType, n.Zone, n.CapacityType))
			}
			slices.Sort(planned)
			if len(planned) != 3 {
				t.Fatalf("the plan launches %v, want 3 nodes", planned)
			}

			createObject(t, deployment)
			var launched []string
			eventually.Holds(t, "the controller launching the plan's nodes", func() (bool, string, error) {
				launched = launched[:0]
				for _, instance := range liveInstances(name) {
					launched = append(launched, offering(instance.InstanceType, instance.AvailabilityZone, instance.CapacityType))
				}
				slices.Sort(launched)
				return len(launched) >= len(planned), fmt.Sprintf("launched %v", launched), nil
			}, eventually.Timeout(waitTimeout))
			if !slices.Equal(launched, planned) {
				t.Errorf("the controller launched %v, the plan said %v", launched, planned)
			}
			waitApp(t, deployment.Name, 3)
		})
	}
}

func offering(instanceType, zone, capacityType string) string {
	return instanceType + " " + zone + " " + capacityType
}

// buildPlugin builds kubectl-karpenter as `make build` does.
func buildPlugin(t *testing.T) string {
	t.Helper()
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(t.TempDir(), "kubectl-karpenter")
	build := environment.GoBuild(root, "-o", binary, "./cmd/kubectl-karpenter")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-karpenter, %v\n%s", err, out)
	}
	return binary
}

// runPlan runs `kubectl karpenter plan --pods` for the Deployment against the sandbox's
// cluster and emulator, with the controller's flags, and returns its report.
func runPlan(t *testing.T, plugin string, deployment *appsv1.Deployment) *plan.Report {
	t.Helper()
	manifest := deployment.DeepCopy()
	manifest.APIVersion, manifest.Kind = "apps/v1", "Deployment"
	data, err := yaml.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	pods := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := os.WriteFile(pods, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(context.Background(), plugin, "plan", "--kubeconfig", stack.Env.KubeconfigPath, "--cluster-name", sandbox.ClusterName,
		"--aws-region", sandbox.Region, "--aws-default-instance-profile", sandbox.InstanceProfile, "--pods", pods, "-o", "json")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+stack.EmulatorURL, "AWS_REGION="+sandbox.Region, "AWS_ACCESS_KEY_ID=sandbox",
		"AWS_SECRET_ACCESS_KEY=sandbox", "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+filepath.Join(t.TempDir(), "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(t.TempDir(), "credentials"), "AWS_PROFILE=")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl karpenter plan: %v\n%s", err, stderr.String())
	}
	report := &plan.Report{}
	if err := json.Unmarshal(stdout.Bytes(), report); err != nil {
		t.Fatalf("reading the plan %s, %v", stdout.String(), err)
	}
	for _, n := range report.NewNodes {
		t.Logf("planned: %s %s %s %.4f, then %v", n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour, n.InstanceTypes[:min(len(n.InstanceTypes), 4)])
	}
	if len(report.Unschedulable) > 0 {
		t.Fatalf("the plan cannot place %+v", report.Unschedulable)
	}
	return report
}
