// Package scaletest holds what the scale harnesses under test/scale share: building the
// controller and the webhook as the sandbox runs them, and summarising samples.
package scaletest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"karpenter.sh/karpenter/pkg/test/environment"
)

// Binaries are the controller and webhook commands built from this repository.
type Binaries struct {
	Controller, Webhook string
}

// Build builds cmd/controller and cmd/webhook into dir.
func Build(dir string) (Binaries, error) {
	root, err := environment.RepositoryRoot()
	if err != nil {
		return Binaries{}, err
	}
	//nolint:gosec // G204: this repository's own commands, built into the caller's directory.
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/controller", "./cmd/webhook")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("building the controller and the webhook, %w\n%s", err, out)
	}
	return Binaries{Controller: filepath.Join(dir, "controller"), Webhook: filepath.Join(dir, "webhook")}, nil
}

// Percentile is the nearest-rank p-th percentile of values, false when there are none.
func Percentile(values []time.Duration, p int) (time.Duration, bool) {
	if len(values) == 0 {
		return 0, false
	}
	sorted := slices.Sorted(slices.Values(values))
	i := (len(sorted)*p+99)/100 - 1
	return sorted[min(max(i, 0), len(sorted)-1)], true
}

// FormatPercentile renders Percentile to 10 ms, or "n/a" without values.
func FormatPercentile(values []time.Duration, p int) string {
	v, ok := Percentile(values, p)
	if !ok {
		return "n/a"
	}
	return v.Round(10 * time.Millisecond).String()
}
