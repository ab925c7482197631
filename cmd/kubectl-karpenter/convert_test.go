package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpenterapis "karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// launchTemplate is a Provisioner v1 has no equivalent for.
const launchTemplate = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: templated}
spec: {provider: {launchTemplate: my-nodes}}
`

// convertedKinds are the kinds and names of the documents of a convert output.
func convertedKinds(t *testing.T, out string) []string {
	t.Helper()
	documents, err := manifests.DecodeAll(strings.NewReader(out))
	if err != nil {
		t.Fatalf("the output does not parse, %v\n%s", err, out)
	}
	var kinds []string
	for _, d := range documents {
		kinds = append(kinds, d.GetKind()+"/"+d.GetName())
	}
	return kinds
}

func TestConvertExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		kinds  []string
		stderr []string
	}{
		{"every Provisioner of a file", []string{"-f", "testdata/provisioners.yaml", "--cluster-name", "demo"}, "", exitConverted,
			[]string{"NodePool/default", "EC2NodeClass/default", "NodePool/spot", "EC2NodeClass/spot"}, []string{"warning: Provisioner spot: spec.provider: amiSelectorTerms al2023@latest"}},
		{"one picked by name", []string{"-f", "testdata/provisioners.yaml", "--cluster-name", "demo", "--provisioner", "spot"}, "", exitConverted,
			[]string{"NodePool/spot", "EC2NodeClass/spot"}, nil},
		{"from stdin, with a file", []string{"--filename", "-", "-f", "testdata/provisioners.yaml", "--cluster-name", "demo", "--aws-default-instance-profile", "nodes", "--provisioner", "templated,default"}, launchTemplate, exitUnconvertible,
			nil, []string{`converting Provisioner templated, v1 launches with no launch template of the user's: write what launch template "my-nodes" holds`, "spec.provider.launchTemplate"}},
		{"a name no file has", []string{"-f", "testdata/provisioners.yaml", "--cluster-name", "demo", "--provisioner", "gpu"}, "", exitUsage,
			nil, []string{`no Provisioner "gpu" in testdata/provisioners.yaml`}},
		{"the controller's defaults missing", []string{"-f", "testdata/provisioners.yaml"}, "", exitUsage,
			nil, []string{"the admission webhook would refuse it", "missing field(s): spec.provider.securityGroupSelector, spec.provider.subnetSelector", "hint: a provider block that names no instance profile"}},
		{"a missing file", []string{"-f", "testdata/missing.yaml"}, "", exitUsage, nil, []string{"reading -f testdata/missing.yaml"}},
		{"a file of other kinds", []string{"-f", "testdata/workload.yaml", "--cluster-name", "demo"}, "", exitUsage, nil, []string{"is not a Provisioner"}},
		{"an argument", []string{"provisioner.yaml"}, "", exitUsage, nil, []string{"files go with -f"}},
		{"an unknown flag", []string{"--nope"}, "", exitUsage, nil, []string{"flag provided but not defined: -nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runConvert(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if kinds := convertedKinds(t, stdout.String()); strings.Join(kinds, " ") != strings.Join(tc.kinds, " ") {
				t.Errorf("printed %v, want %v", kinds, tc.kinds)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q does not say %q", stderr.String(), want)
				}
			}
		})
	}
}

func TestConvertIsASubcommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"convert", "-f", "testdata/provisioners.yaml", "--cluster-name", "demo"}, &stdout, &stderr); code != exitConverted {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	if code := run(context.Background(), []string{"nope"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "usage: kubectl karpenter plan|convert") {
		t.Errorf("an unknown subcommand: exit status %d, stderr %q", code, stderr.String())
	}
}

// TestConvertReadsTheClusterAndItsOutputApplies: on a real kube-apiserver with the CRDs, the
// command converts the cluster's Provisioners (all, or those named), stored without the webhook
// so that the controller's defaults come from the flags, and what it prints applies as it is.
func TestConvertReadsTheClusterAndItsOutputApplies(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{karpenterapis.AddToScheme}})
	ctx := context.Background()
	for _, p := range manifests.DecodeFile(t, "testdata/provisioners.yaml") {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		kinds []string
	}{
		{"all", nil, exitConverted, []string{"NodePool/default", "EC2NodeClass/default", "NodePool/spot", "EC2NodeClass/spot"}},
		{"one", []string{"--provisioner", "spot"}, exitConverted, []string{"NodePool/spot", "EC2NodeClass/spot"}},
		{"one the cluster has not", []string{"--provisioner", "gpu"}, exitUsage, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--kubeconfig", env.KubeconfigPath, "--cluster-name", "demo"}, tc.args...)
			if code := runConvert(ctx, args, strings.NewReader(""), &stdout, &stderr); code != tc.code {
				t.Fatalf("exit status %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if kinds := convertedKinds(t, stdout.String()); strings.Join(kinds, " ") != strings.Join(tc.kinds, " ") {
				t.Errorf("printed %v, want %v", kinds, tc.kinds)
			}
		})
	}

	var stdout, stderr bytes.Buffer
	if code := runConvert(ctx, []string{"--kubeconfig", env.KubeconfigPath, "--cluster-name", "demo"}, strings.NewReader(""), &stdout, &stderr); code != exitConverted {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	documents, err := manifests.DecodeAll(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, document := range documents {
		if err := env.Client.Create(ctx, document.DeepCopy(), client.FieldValidation("Strict")); err != nil {
			t.Fatalf("%s %s was refused, %v", document.GetKind(), document.GetName(), err)
		}
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(document.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(document), stored); err != nil {
			t.Fatal(err)
		}
		if path, ok := admission.Contains(stored.Object, document.Object, ""); !ok {
			t.Errorf("%s %s is stored without what it sets at %s", document.GetKind(), document.GetName(), path)
		}
		// Stored without the webhook, the Provisioners select no subnets: the class selects the
		// cluster's, as the controller started with --cluster-name demo does.
		clusterTagged := []any{map[string]any{"tags": map[string]any{"kubernetes.io/cluster/demo": "*"}}}
		if path, ok := admission.Contains(stored.Object["spec"], map[string]any{"subnetSelectorTerms": clusterTagged}, "spec"); document.GetKind() == "EC2NodeClass" && !ok {
			t.Errorf("EC2NodeClass %s differs at %s from selecting the cluster's subnets", document.GetName(), path)
		}
	}
}
