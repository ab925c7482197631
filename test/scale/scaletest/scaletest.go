// Package scaletest holds what the scale harnesses under test/scale share: building the
// controller and the webhook as the sandbox runs them, and summarising samples.
package scaletest

import (
	"slices"
	"time"

	"karpenter.sh/karpenter/test/sandbox"
)

// Binaries are the controller and webhook commands built from this repository.
type Binaries struct {
	Controller, Webhook string
}

// Build builds cmd/controller and cmd/webhook into dir, as the sandbox's stack runs them.
func Build(dir string) (Binaries, error) {
	controller, webhook, err := sandbox.Build(dir)
	return Binaries{Controller: controller, Webhook: webhook}, err
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
