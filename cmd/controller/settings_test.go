package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/environment"
)

// TestUpstreamVariablesSetTheirFlags: each environment variable of upstream Karpenter that has a
// meaning here sets the flag that holds it, as upstream's chart and users' manifests set them.
func TestUpstreamVariablesSetTheirFlags(t *testing.T) {
	for _, c := range []struct {
		variable, value string
		// flag is this binary's flag that the variable sets, and want its value then.
		flag, want string
	}{
		{"DISABLE_LEADER_ELECTION", "true", "leader-elect", "false"},
		{"METRICS_PORT", "9090", "metrics-bind-address", ":9090"},
		{"HEALTH_PROBE_PORT", "9091", "health-probe-bind-address", ":9091"},
		{"ENABLE_PROFILING", "true", "profiling", "true"},
		{"CLUSTER_CA_BUNDLE", "LS0tLS1CRUdJTg==", "cluster-ca-bundle", "LS0tLS1CRUdJTg=="},
		{"ISOLATED_VPC", "true", "isolated-vpc", "true"},
		{"VM_MEMORY_OVERHEAD_PERCENT", "0.1", "vm-memory-overhead-percent", "0.1"},
		{"RESERVED_ENIS", "1", "reserved-enis", "1"},
		{"FEATURE_GATES", "SpotToSpotConsolidation=false", "feature-gates", "SpotToSpotConsolidation=false"},
		{"MIN_VALUES_POLICY", "BestEffort", "min-values-policy", "BestEffort"},
		{"LOG_OUTPUT_PATHS", "stdout", "log-output-paths", "stdout"},
		{"LOG_ERROR_OUTPUT_PATHS", "stderr", "log-error-output-paths", "stderr"},
	} {
		t.Run(c.variable, func(t *testing.T) {
			t.Setenv(c.variable, c.value)
			fs := flag.NewFlagSet("controller", flag.ContinueOnError)
			if _, err := parseFlags(fs, nil); err != nil {
				t.Fatal(err)
			}
			f := fs.Lookup(c.flag)
			if f == nil {
				t.Fatalf("no flag --%s: %s=%s is ignored", c.flag, c.variable, c.value)
			}
			if got := f.Value.String(); got != c.want {
				t.Errorf("%s=%s sets --%s=%s, want %s", c.variable, c.value, c.flag, got, c.want)
			}
		})
	}
}

// TestStartupReportsIgnoredAndOverriddenVariables starts the controller binary as a pod would,
// with a flag and its environment variable both set and upstream variables this project has no
// meaning for: before anything else it warns, naming each.
func TestStartupReportsIgnoredAndOverriddenVariables(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "controller")
	if out, err := environment.GoBuild(".", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	command := exec.CommandContext(ctx, binary, "--cluster-name=from-the-flag", "--log-format=console")
	command.Env = append(os.Environ(),
		// No cluster: the binary stops right after reading its settings.
		"KUBECONFIG="+filepath.Join(t.TempDir(), "missing"), "KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT=",
		"CLUSTER_NAME=from-the-environment",
		"EKS_CONTROL_PLANE=true",
		"ENABLE_ZONAL_SHIFT=true",
		"AMI_REFRESH_INTERVAL=5m",
		"KARPENTER_SERVICE=karpenter",
		"PREFERENCE_POLICY=Ignore",
		"DISABLE_DRY_RUN=false", // upstream's default, what this project does: not reported
	)
	var output bytes.Buffer
	command.Stdout, command.Stderr = &output, &output
	_ = command.Run() // it fails without a cluster; what it said first is the point
	for _, want := range []string{"CLUSTER_NAME", "from-the-flag", "EKS_CONTROL_PLANE", "ENABLE_ZONAL_SHIFT", "AMI_REFRESH_INTERVAL", "KARPENTER_SERVICE", "PREFERENCE_POLICY"} {
		if !strings.Contains(output.String(), want) {
			t.Errorf("the controller's start-up output does not name %s:\n%s", want, output.String())
		}
	}
	if strings.Contains(output.String(), "DISABLE_DRY_RUN") {
		t.Errorf("DISABLE_DRY_RUN=false, what this project does, is reported:\n%s", output.String())
	}
}

// TestFeatureGates: the gates with a meaning here set their options, with upstream's defaults;
// the others are reported when enabled, and an unknown gate is refused.
func TestFeatureGates(t *testing.T) {
	for _, c := range []struct {
		value                 string
		noSpotToSpot, overlay bool
		ignored               []string
		refused               bool
	}{
		{value: "", noSpotToSpot: true},
		{value: "SpotToSpotConsolidation=false", noSpotToSpot: true},
		{value: "SpotToSpotConsolidation=true"},
		{value: "NodeOverlay=true", noSpotToSpot: true, overlay: true},
		{value: "NodeOverlay=false,NodeRepair=true", noSpotToSpot: true, ignored: []string{"NodeRepair=true"}},
		{value: "NodeOverlay", refused: true},
		{value: "Unknown=true", refused: true},
	} {
		t.Run(c.value, func(t *testing.T) {
			fs := flag.NewFlagSet("controller", flag.ContinueOnError)
			f, err := parseFlags(fs, []string{"--feature-gates=" + c.value})
			if c.refused {
				if err == nil {
					t.Errorf("--feature-gates=%s is accepted, want it refused", c.value)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.operator.Controllers; got.ConsolidationNoSpotToSpot != c.noSpotToSpot || got.NodeOverlay != c.overlay {
				t.Errorf("no spot-to-spot %t, NodeOverlay %t; want %t, %t", got.ConsolidationNoSpotToSpot, got.NodeOverlay, c.noSpotToSpot, c.overlay)
			}
			var warned []string
			for _, w := range f.warnings {
				if strings.HasPrefix(w, "feature gate ") {
					warned = append(warned, strings.Fields(w)[2])
				}
			}
			if strings.Join(warned, ",") != strings.Join(c.ignored, ",") {
				t.Errorf("warned of %v, want %v", warned, c.ignored)
			}
		})
	}
}

// TestMinValuesPolicy: --min-values-policy is Strict unless set to BestEffort; anything else is
// refused.
func TestMinValuesPolicy(t *testing.T) {
	for _, c := range []struct {
		args    []string
		want    scheduling.MinValuesPolicy
		refused bool
	}{
		{args: nil, want: scheduling.MinValuesStrict},
		{args: []string{"--min-values-policy=BestEffort"}, want: scheduling.MinValuesBestEffort},
		{args: []string{"--min-values-policy=Strict"}, want: scheduling.MinValuesStrict},
		{args: []string{"--min-values-policy=bestEffort"}, refused: true},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			f, err := parseFlags(flag.NewFlagSet("controller", flag.ContinueOnError), c.args)
			if c.refused {
				if err == nil {
					t.Errorf("%v is accepted, want it refused", c.args)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.operator.Controllers.MinValuesPolicy; got != c.want {
				t.Errorf("policy %q, want %q", got, c.want)
			}
		})
	}
}
