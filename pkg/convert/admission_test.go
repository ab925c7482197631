package convert_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/convert"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// admitted creates object with a server-side dry run and strict field validation, as
// `kubectl apply --dry-run=server --validate=strict` would, and checks that the CRD admits it and
// stores every field it sets (none pruned).
func admitted(t *testing.T, c client.Client, object *unstructured.Unstructured) {
	t.Helper()
	stored := object.DeepCopy()
	if err := c.Create(context.Background(), stored, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
		t.Errorf("%s %s was refused, %v", object.GetKind(), object.GetName(), err)
		return
	}
	if path, ok := admission.Contains(stored.Object, object.Object, object.GetKind()); !ok {
		t.Errorf("%s %s is stored without what it sets at %s", object.GetKind(), object.GetName(), path)
	}
}

// refused creates object as admitted does and checks that the CRD refuses it.
func refused(t *testing.T, c client.Client, object *unstructured.Unstructured) {
	t.Helper()
	if err := c.Create(context.Background(), object.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict")); err == nil {
		t.Errorf("%s %s was admitted", object.GetKind(), object.GetName())
	}
}

// TestConvertedObjectsPassTheV1CRDs applies what each case of testdata/cases.yaml converts to
// a kube-apiserver with this repository's v1 CRDs: the schema and CEL rules admit every object
// and keep all of it. The converter's own refusals of label and tag keys are the CRDs': a key it
// refuses the CRD refuses, one it converts the CRD admits.
func TestConvertedObjectsPassTheV1CRDs(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := context.Background()
	options := convert.Options{ClusterName: "demo", DefaultInstanceProfile: "nodes"}

	t.Run("cases", func(t *testing.T) {
		for _, tc := range readCases(t) {
			if tc.Error != "" {
				continue
			}
			t.Run(tc.Name, func(t *testing.T) {
				result, err := convert.Provisioner(ctx, &tc.Provisioner, convert.Options(tc.Options))
				if err != nil {
					t.Fatal(err)
				}
				nodePool, nodeClass := converted(t, result)
				admitted(t, env.Client, nodePool)
				admitted(t, env.Client, nodeClass)
			})
		}
	})

	// Keys the Provisioner's webhook takes; the v1 CRDs refuse some.
	t.Run("label keys", func(t *testing.T) {
		for _, key := range []string{
			"team", "example.com/team", "example.com/karpenter.sh", "node.kubernetes.io/pool", "karpenter.sh",
			"karpenter.sh/team", "team.karpenter.sh/pool", "notkarpenter.sh/pool",
			"karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/team", "karpenter.k8s.aws/ec2nodeclass", "eu.karpenter.k8s.aws/team",
		} {
			t.Run(key, func(t *testing.T) {
				p := &v1alpha5.Provisioner{}
				p.Name = "labels"
				p.Spec.Labels = map[string]string{key: "x"}
				result, convertErr := convert.Provisioner(ctx, p, options)
				if convertErr == nil {
					nodePool, _ := converted(t, result)
					admitted(t, env.Client, nodePool)
					return
				}
				if !strings.Contains(convertErr.Error(), "v1 reserves the label domain") {
					t.Fatalf("refused for another reason than v1's, %v", convertErr)
				}
				result, err := convert.Provisioner(ctx, &v1alpha5.Provisioner{ObjectMeta: p.ObjectMeta}, options)
				if err != nil {
					t.Fatal(err)
				}
				nodePool, _ := converted(t, result)
				if err := unstructured.SetNestedField(nodePool.Object, map[string]any{key: "x"}, "spec", "template", "metadata", "labels"); err != nil {
					t.Fatal(err)
				}
				refused(t, env.Client, nodePool)
			})
		}
	})

	t.Run("tag keys", func(t *testing.T) {
		for _, key := range []string{"team", "eks:eks-cluster-name", "eks:other", "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/other", "kubernetes.io/clusterfoo", "kubernetes.io/other"} {
			t.Run(key, func(t *testing.T) {
				p := &v1alpha5.Provisioner{}
				p.Name = "tags"
				p.Spec.Provider = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"tags": {%q: "x"}}`, key)}
				result, convertErr := convert.Provisioner(ctx, p, options)
				if convertErr == nil {
					_, nodeClass := converted(t, result)
					admitted(t, env.Client, nodeClass)
					return
				}
				if !strings.Contains(convertErr.Error(), "v1 reserves tag") {
					t.Fatalf("refused for another reason than v1's, %v", convertErr)
				}
				result, err := convert.Provisioner(ctx, &v1alpha5.Provisioner{ObjectMeta: p.ObjectMeta}, options)
				if err != nil {
					t.Fatal(err)
				}
				_, nodeClass := converted(t, result)
				if err := unstructured.SetNestedField(nodeClass.Object, map[string]any{key: "x"}, "spec", "tags"); err != nil {
					t.Fatal(err)
				}
				refused(t, env.Client, nodeClass)
			})
		}
	})
}

// documentedProvisioner is a Provisioner a reader may copy: from a ```yaml block of README.md or
// docs/*.md, a file of docs/examples, or Karpenter v0.5's documentation (the v1alpha5 test data).
type documentedProvisioner struct {
	// where is "file name", as failures and unconvertible name it.
	where       string
	provisioner v1alpha5.Provisioner
}

// unconvertible are the documented Provisioners that do not convert, and what the error says.
var unconvertible = map[string]string{
	// Shown because the webhook refuses it.
	"docs/aws.md refused": "the admission webhook would refuse it",
	// v1 has no launch templates of the user's.
	"pkg/apis/provisioning/v1alpha5/testdata/v0.5-examples.yaml launch-template": "spec.provider.launchTemplate",
}

// TestDocumentedProvisionersConvert converts every v1alpha5 Provisioner of the documentation
// with the controller defaults the docs assume (cluster demo, its instance profile): each
// converts, but those of unconvertible with the error they name, and the kube-apiserver with the
// v1 CRDs admits every object it converts to.
func TestDocumentedProvisionersConvert(t *testing.T) {
	documented := documentedProvisioners(t)
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	options := convert.Options{ClusterName: "demo", DefaultInstanceProfile: "KarpenterNodeInstanceProfile-demo"}
	seen := map[string]bool{}
	for _, d := range documented {
		t.Run(d.where, func(t *testing.T) {
			seen[d.where] = true
			result, err := convert.Provisioner(context.Background(), &d.provisioner, options)
			if want, ok := unconvertible[d.where]; ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("converted with error %v, want one containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			nodePool, nodeClass := converted(t, result)
			admitted(t, env.Client, nodePool)
			admitted(t, env.Client, nodeClass)
		})
	}
	for where := range unconvertible {
		if !seen[where] {
			t.Errorf("unconvertible names %s, which the documentation no longer has", where)
		}
	}
}

// provisionerKind matches the line that makes a YAML document a Provisioner.
var provisionerKind = regexp.MustCompile(`(?m)^kind: Provisioner\s*$`)

// documentedProvisioners reads every Provisioner of the documentation, and fails the test when a
// "kind: Provisioner" line of it is not in one that was read (a heredoc, say), so that none goes
// unconverted unnoticed.
func documentedProvisioners(t *testing.T) []documentedProvisioner {
	t.Helper()
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	markdown, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	yamlFiles, err := filepath.Glob(filepath.Join(root, "docs", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yamlFiles = append(yamlFiles, filepath.Join(root, "pkg/apis/provisioning/v1alpha5/testdata/v0.5-examples.yaml"))
	var out []documentedProvisioner
	read := func(path string, blocks []string) {
		content, err := os.ReadFile(path) //nolint:gosec // G304: a file of the repository.
		if err != nil {
			t.Fatal(err)
		}
		file, err := filepath.Rel(root, path)
		if err != nil {
			t.Fatal(err)
		}
		if blocks == nil {
			blocks = []string{string(content)}
		}
		found := 0
		for _, block := range blocks {
			documents, err := manifests.DecodeAll(strings.NewReader(block))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, document := range documents {
				if document.GetAPIVersion() != v1alpha5.SchemeGroupVersion.String() || document.GetKind() != "Provisioner" {
					continue
				}
				raw, err := yaml.Marshal(document.Object)
				if err != nil {
					t.Fatal(err)
				}
				var p v1alpha5.Provisioner
				if err := yaml.UnmarshalStrict(raw, &p); err != nil {
					t.Fatalf("%s: Provisioner %s, %v", file, document.GetName(), err)
				}
				out = append(out, documentedProvisioner{where: file + " " + p.Name, provisioner: p})
				found++
			}
		}
		if lines := len(provisionerKind.FindAllString(string(content), -1)); lines != found {
			t.Fatalf("%s has %d lines 'kind: Provisioner' but %d Provisioners were read from it", file, lines, found)
		}
	}
	for _, path := range append([]string{filepath.Join(root, "README.md")}, markdown...) {
		content, err := os.ReadFile(path) //nolint:gosec // G304: a file of the repository.
		if err != nil {
			t.Fatal(err)
		}
		read(path, yamlBlocks(string(content)))
	}
	for _, path := range yamlFiles {
		read(path, nil)
	}
	if len(out) == 0 {
		t.Fatal("no documented Provisioner found")
	}
	return out
}

// yamlBlocks are the bodies of the ```yaml fenced blocks of a Markdown text; a text without
// any gives an empty, not nil, list.
func yamlBlocks(markdown string) []string {
	blocks := []string{}
	var body []string
	inYAML := false
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !inYAML && trimmed == "```yaml":
			inYAML, body = true, nil
		case inYAML && trimmed == "```":
			inYAML = false
			blocks = append(blocks, strings.Join(body, "\n"))
		case inYAML:
			body = append(body, line)
		}
	}
	return blocks
}
