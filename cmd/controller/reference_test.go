package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/flagenv"
)

// update rewrites the generated parts of docs/reference/settings.md (`make generate`).
var update = flag.Bool("update", false, "rewrite the generated sections of docs/reference/settings.md")

var settingsReference = filepath.Join("..", "..", "docs", "reference", "settings.md")

// chartValues are the chart's values that set the controller's flags (charts/karpenter's
// _helpers.tpl); test/release checks each value's effect.
var chartValues = map[string]string{
	"metrics-bind-address":         "controller.metrics.port",
	"health-probe-bind-address":    "controller.healthProbe.port",
	"log-level":                    "logLevel",
	"log-output-paths":             "logOutputPaths",
	"log-error-output-paths":       "logErrorOutputPaths",
	"prometheus-uri":               "settings.prometheusURI",
	"bind-pods":                    "settings.bindPods",
	"cluster-name":                 "settings.clusterName",
	"cluster-endpoint":             "settings.clusterEndpoint",
	"cluster-ca-bundle":            "settings.clusterCABundle",
	"batch-max-duration":           "settings.batchMaxDuration",
	"batch-idle-duration":          "settings.batchIdleDuration",
	"interruption-queue":           "settings.interruptionQueue",
	"isolated-vpc":                 "settings.isolatedVPC",
	"vm-memory-overhead-percent":   "settings.vmMemoryOverheadPercent",
	"reserved-enis":                "settings.reservedENIs",
	"feature-gates":                "settings.featureGates.spotToSpotConsolidation",
	"min-values-policy":            "settings.minValuesPolicy",
	"aws-region":                   "settings.aws.region",
	"aws-default-instance-profile": "settings.aws.defaultInstanceProfile",
}

// replaceSection puts body between the markers <!-- generated: name --> and its end marker.
func replaceSection(t *testing.T, document, name, body string) string {
	t.Helper()
	begin, end := fmt.Sprintf("<!-- generated: %s -->\n", name), fmt.Sprintf("<!-- end generated: %s -->", name)
	i, j := strings.Index(document, begin), strings.Index(document, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no section %s (%q ... %q)", settingsReference, name, begin, end)
	}
	return document[:i+len(begin)] + body + document[j:]
}

// TestSettingsReferenceIsCurrent keeps docs/reference/settings.md's controller sections what the
// controller's flags, upstream's variables and the chart's values are.
func TestSettingsReferenceIsCurrent(t *testing.T) {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	if _, err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	for name := range chartValues {
		if fs.Lookup(name) == nil {
			t.Errorf("chartValues names --%s, which the controller does not have", name)
		}
	}
	var ignored strings.Builder
	ignored.WriteString("| variable | reported unless | why it has no effect here |\n| --- | --- | --- |\n")
	for _, v := range upstreamIgnored {
		inert := "never"
		if v.Inert != "" {
			inert = "`" + v.Inert + "`"
		}
		fmt.Fprintf(&ignored, "| `%s` | %s | %s |\n", v.Variable, inert, v.Why)
	}
	data, err := os.ReadFile(settingsReference)
	if err != nil {
		t.Fatal(err)
	}
	want := replaceSection(t, string(data), "controller", flagenv.Reference(fs, upstreamAliases, chartValues))
	want = replaceSection(t, want, "upstream-ignored", ignored.String())
	if *update {
		if err := os.WriteFile(settingsReference, []byte(want), 0o644); err != nil { //nolint:gosec // G306: a document of the repository.
			t.Fatal(err)
		}
		return
	}
	if want != string(data) {
		t.Errorf("%s is stale; run `make generate`", settingsReference)
	}
}
