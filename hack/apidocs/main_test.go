package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceIsCurrent fails when docs/reference.md is not what the CRDs in config/crd
// render, so the reference cannot drift from the API.
func TestReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	crds, err := readCRDs(filepath.Join(root, "config", "crd"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, render(crds)) {
		t.Error("docs/reference.md is stale; run `make generate` and commit it")
	}
}
