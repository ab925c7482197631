package convert_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/convert"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// conversionCase is one case of testdata/cases.yaml.
type conversionCase struct {
	Name        string               `json:"name"`
	Options     caseOptions          `json:"options"`
	Provisioner v1alpha5.Provisioner `json:"provisioner"`
	NodePool    map[string]any       `json:"nodePool,omitempty"`
	NodeClass   map[string]any       `json:"ec2NodeClass,omitempty"`
	Warnings    []string             `json:"warnings,omitempty"`
	Error       string               `json:"error,omitempty"`
}

type caseOptions struct {
	ClusterName            string `json:"clusterName,omitempty"`
	DefaultInstanceProfile string `json:"defaultInstanceProfile,omitempty"`
}

func readCases(t *testing.T) []conversionCase {
	t.Helper()
	data, err := os.ReadFile("testdata/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []conversionCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("reading testdata/cases.yaml, %v", err)
	}
	return cases
}

// converted is what the command prints for one result, read back as the objects kubectl would
// apply: the NodePool, then the EC2NodeClass.
func converted(t *testing.T, result *convert.Result) (nodePool, nodeClass *unstructured.Unstructured) {
	t.Helper()
	var out bytes.Buffer
	if err := convert.Write(&out, []*convert.Result{result}); err != nil {
		t.Fatal(err)
	}
	documents, err := manifests.DecodeAll(&out)
	if err != nil {
		t.Fatalf("the output does not parse, %v\n%s", err, out.String())
	}
	if len(documents) != 2 || documents[0].GetKind() != "NodePool" || documents[1].GetKind() != "EC2NodeClass" {
		t.Fatalf("the output is not a NodePool and an EC2NodeClass:\n%s", out.String())
	}
	return documents[0], documents[1]
}

// TestConvertProvisioner converts each case's Provisioner and checks the printed objects, the
// fields warned about, or the error.
func TestConvertProvisioner(t *testing.T) {
	for _, tc := range readCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			tc.Provisioner.APIVersion, tc.Provisioner.Kind = v1alpha5.SchemeGroupVersion.String(), "Provisioner"
			result, err := convert.Provisioner(context.Background(), &tc.Provisioner, convert.Options(tc.Options))
			if tc.Error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.Error) {
					t.Fatalf("converted with error %v, want one containing\n  %s", err, tc.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			nodePool, nodeClass := converted(t, result)
			if path, ok := admission.Contains(nodePool.Object, tc.NodePool, "NodePool"); !ok {
				t.Errorf("the NodePool %v\ndiffers from the case at %s", nodePool.Object, path)
			}
			if path, ok := admission.Contains(nodeClass.Object, tc.NodeClass, "EC2NodeClass"); !ok {
				t.Errorf("the EC2NodeClass %v\ndiffers from the case at %s", nodeClass.Object, path)
			}
			var warned []string
			for _, w := range result.Warnings {
				warned = append(warned, w.Field)
			}
			if strings.Join(warned, ",") != strings.Join(tc.Warnings, ",") {
				t.Errorf("warned about %v, want %v", warned, tc.Warnings)
			}
		})
	}
}

// TestConvertLeavesTheProvisionerAsItIs: defaulting happens on a copy.
func TestConvertLeavesTheProvisionerAsItIs(t *testing.T) {
	p := &v1alpha5.Provisioner{}
	p.Name = "default"
	if _, err := convert.Provisioner(context.Background(), p, convert.Options{ClusterName: "demo", DefaultInstanceProfile: "nodes"}); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Requirements != nil || p.Spec.Provider != nil {
		t.Errorf("the Provisioner was defaulted in place: %+v", p.Spec)
	}
}

// TestWriteWrapsWarningsAsComments: each Provisioner's documents start with a comment naming it
// and each warning, wrapped, so that kubectl apply reads them as comments and a reader sees them.
func TestWriteWrapsWarningsAsComments(t *testing.T) {
	p := &v1alpha5.Provisioner{}
	p.Name = "default"
	ttl := int64(3600)
	p.Spec.TTLSecondsUntilExpired = &ttl
	result, err := convert.Provisioner(context.Background(), p, convert.Options{ClusterName: "demo", DefaultInstanceProfile: "nodes"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := convert.Write(&out, []*convert.Result{result, result}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "# Provisioner default, converted by kubectl karpenter convert (docs/migrating-to-v1.md)." {
		t.Errorf("the output starts with %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "# WARNING spec.ttlSecondsUntilExpired: converted to expireAfter 1h") {
		t.Errorf("the first warning reads %q", lines[1])
	}
	for _, line := range lines {
		if strings.HasPrefix(line, "#") && len(line) > 100 {
			t.Errorf("comment line of %d characters: %q", len(line), line)
		}
	}
	documents, err := manifests.DecodeAll(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(documents) != 4 {
		t.Errorf("%d documents for two Provisioners, want 4", len(documents))
	}
}

// TestMigrationGuideShowsTheCommandsOutput: the worked example of docs/migrating-to-v1.md, a
// Provisioner's block followed by the block of what the command prints for it, is the
// command's output, byte for byte.
func TestMigrationGuideShowsTheCommandsOutput(t *testing.T) {
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "migrating-to-v1.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlocks(string(guide))
	example := slices.IndexFunc(blocks, func(b string) bool { return strings.Contains(b, "kind: Provisioner") })
	if example < 0 || example+1 >= len(blocks) {
		t.Fatalf("docs/migrating-to-v1.md has no Provisioner block followed by its conversion (%d yaml blocks)", len(blocks))
	}
	var p v1alpha5.Provisioner
	if err := yaml.UnmarshalStrict([]byte(blocks[example]), &p); err != nil {
		t.Fatal(err)
	}
	result, err := convert.Provisioner(context.Background(), &p, convert.Options{ClusterName: "demo", DefaultInstanceProfile: "KarpenterNodeInstanceProfile-demo"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := convert.Write(&out, []*convert.Result{result}); err != nil {
		t.Fatal(err)
	}
	if got, shown := strings.TrimSpace(out.String()), strings.TrimSpace(blocks[example+1]); got != shown {
		t.Errorf("docs/migrating-to-v1.md shows\n%s\nthe command prints\n%s", shown, got)
	}
}
