package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/flagenv"
)

// update rewrites the generated part of docs/reference/settings.md (`make generate`).
var update = flag.Bool("update", false, "rewrite the webhook's section of docs/reference/settings.md")

// chartValues are the chart's values that set the webhook's flags.
var chartValues = map[string]string{
	"port":      "webhook.port",
	"log-level": "logLevel",
}

// TestSettingsReferenceIsCurrent keeps docs/reference/settings.md's webhook section what the
// webhook's flags are.
func TestSettingsReferenceIsCurrent(t *testing.T) {
	t.Setenv("SYSTEM_NAMESPACE", "karpenter")
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	if _, err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	// The namespace's default is the pod's, read from the environment.
	fs.Lookup("namespace").DefValue = "$SYSTEM_NAMESPACE"
	path := filepath.Join("..", "..", "docs", "reference", "settings.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- generated: webhook -->\n", "<!-- end generated: webhook -->"
	i, j := strings.Index(string(data), begin), strings.Index(string(data), end)
	if i < 0 || j < i {
		t.Fatalf("%s has no webhook section", path)
	}
	want := string(data[:i+len(begin)]) + strings.ReplaceAll(flagenv.Reference(fs, nil, chartValues), "`controller.env`", "`webhook.env`") + string(data[j:])
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil { //nolint:gosec // G306: a document of the repository.
			t.Fatal(err)
		}
		return
	}
	if want != string(data) {
		t.Errorf("%s is stale; run `make generate`", path)
	}
}
