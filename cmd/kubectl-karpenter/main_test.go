package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/plan"
)

// offline is the command line of a plan that reads no cluster, for testdata's files.
func offline(pods string, more ...string) []string {
	return append([]string{"plan", "--offline", "--cluster-name", "demo", "--instance-types", "testdata/instance-types.yaml",
		"--provisioners", "testdata/provisioners.yaml", "--pods", pods}, more...)
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"every pod placed", offline("testdata/workload.yaml"), exitPlaced,
			[]string{"jobs/batch-0 new node 5 (c5.xlarge)", "shop/near-cache new node 1 (m5.large)", "shop/zonal new node", "0 pods cannot be placed"}, ""},
		{"some pods cannot be placed", offline("testdata/unplaceable.yaml"), exitUnplaceable,
			[]string{"UNSCHEDULABLE POD", "default/elsewhere", "default/huge"}, ""},
		{"no subcommand", nil, exitUsage, nil, "usage: kubectl karpenter plan"},
		{"an unknown flag", []string{"plan", "--nope"}, exitUsage, nil, "flag provided but not defined: -nope"},
		{"no instance types", []string{"plan"}, exitUsage, nil, "--cluster-name, or from a file with --instance-types"},
		{"a bad output format", offline("testdata/workload.yaml", "-o", "xml"), exitUsage, nil, "-o must be table, yaml or json"},
		{"--offline without files", []string{"plan", "--offline", "--instance-types", "testdata/instance-types.yaml"}, exitUsage, nil, "--offline needs"},
		{"--consolidation with what-if", offline("testdata/workload.yaml", "--consolidation"), exitUsage, nil, "--consolidation plans for the cluster as it is"},
		{"a missing file", offline("testdata/missing.yaml"), exitUsage, nil, "reading --pods"},
		{"an unknown feature gate", offline("testdata/workload.yaml", "--feature-gates", "Nope=true"), exitUsage, nil, `--feature-gates: unknown gate "Nope"`},
		{"an unknown min-values policy", offline("testdata/workload.yaml", "--min-values-policy", "Lenient"), exitUsage, nil, `--min-values-policy must be Strict or BestEffort, not "Lenient"`},
		{"a file of the wrong kinds", offline("testdata/provisioners.yaml"), exitUsage, nil, "testdata/provisioners.yaml:2: Provisioner default: is not a kind that runs pods"},
		{"Provisioners the webhook refuses", []string{"plan", "--offline", "--instance-types", "testdata/instance-types.yaml",
			"--provisioners", "testdata/provisioners.yaml", "--pods", "testdata/workload.yaml"}, exitUsage, nil, "the admission webhook would refuse it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			// Column widths depend on the longest cell: compare words.
			words := strings.Join(strings.Fields(stdout.String()), " ")
			for _, want := range tc.stdout {
				if !strings.Contains(words, want) {
					t.Errorf("stdout\n%s\ndoes not say %q", stdout.String(), want)
				}
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.stderr)
			}
		})
	}
}

// TestYAMLOutput: -o yaml is a Report, for scripts; the workload's DaemonSet is reserved on
// every new node and its pods are planned nowhere.
func TestYAMLOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), offline("testdata/workload.yaml", "-o", "yaml"), &stdout, &stderr); code != exitPlaced {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	var report plan.Report
	if err := yaml.UnmarshalStrict(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	pods, total := 0, 0.0
	for _, n := range report.NewNodes {
		pods += len(n.Pods)
		total += n.PricePerHour
		for _, pod := range n.Pods {
			if strings.HasPrefix(pod, "kube-system/agent") {
				t.Errorf("the DaemonSet's pod %s is planned a node of its own", pod)
			}
		}
	}
	if pods != 11 {
		t.Errorf("%d pods on new nodes, want the workload's 11", pods)
	}
	if diff := total - report.PricePerHour; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("total $%f/h, want the sum of the nodes' $%f/h", report.PricePerHour, total)
	}
}
