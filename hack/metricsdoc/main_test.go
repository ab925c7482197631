package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMetricsReferenceIsCurrent keeps docs/reference/metrics.md what the collectors say, and
// every upstream family named there registered.
func TestMetricsReferenceIsCurrent(t *testing.T) {
	page, err := render()
	if err != nil {
		t.Fatal(err)
	}
	all, err := families()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range upstreamFamilies {
		if !slices.ContainsFunc(all, func(f family) bool { return f.name == name }) {
			t.Errorf("upstream's %s is not registered", name)
		}
	}
	if !strings.Contains(page, "`karpenter_nodes_created_total` | counter | `nodepool`") {
		t.Errorf("the page does not list karpenter_nodes_created_total by nodepool:\n%s", page)
	}
	committed, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != page {
		t.Error("docs/reference/metrics.md is stale; run `make generate`")
	}
}
