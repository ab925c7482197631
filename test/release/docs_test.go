package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedHelmCommandsRender renders every `helm upgrade --install` and `helm upgrade` of
// the docs and the charts' READMEs that installs charts/karpenter, with each --set as written
// (shell variables given sample values) and a v0.5-era values file for -f: a value the docs name
// that the chart does not take fails here.
func TestDocumentedHelmCommandsRender(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(repositoryRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repositoryRoot, "README.md"), filepath.Join(chart, "README.md"))
	samples := strings.NewReplacer("$REGISTRY", "registry.example", "$ACCOUNT", "111122223333", "$REGION", "us-west-2",
		"${ACCOUNT}", "111122223333", "$CLUSTER", "prod", "${CLUSTER_NAME}", "prod", "$VERSION", "v0.0.0-test", "sha256:...", "sha256:"+strings.Repeat("0", 64))
	command := regexp.MustCompile(`(?m)^helm upgrade (?:--install )?karpenter charts/karpenter ((?:[^\n]*\\\n)*[^\n]*)$`)
	set := regexp.MustCompile(`--set ([^ ]+)`)
	rendered := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range command.FindAllStringSubmatch(string(data), -1) {
			line := samples.Replace(strings.ReplaceAll(m[1], "\\\n", " "))
			args := []string{"template", "karpenter", chart, "--namespace", namespace}
			for _, s := range set.FindAllStringSubmatch(line, -1) {
				if s[1] != "..." {
					args = append(args, "--set", strings.ReplaceAll(s[1], `"`, ""))
				}
			}
			if strings.Contains(line, "-f values-v0.5.yaml") {
				args = append(args, "-f", v05UserValues)
			}
			if !strings.Contains(line, "controller.image") {
				args = append(args, "--set", "controller.image.repository="+testImage)
			}
			if _, err := helm(args...); err != nil {
				t.Errorf("%s: the documented command\nhelm upgrade karpenter charts/karpenter %s\ndoes not render: %v", filepath.Base(file), m[1], err)
			}
			rendered++
		}
	}
	if rendered < 3 {
		t.Errorf("only %d documented helm commands found", rendered)
	}
}
