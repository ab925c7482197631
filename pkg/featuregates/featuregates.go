// Package featuregates reads upstream Karpenter's feature gates (--feature-gates,
// FEATURE_GATES), which the controller and `kubectl karpenter plan` take alike so that the plan
// runs with the controller's features.
package featuregates

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Gates are the gates with a meaning here, with upstream's defaults: both false (spot-to-spot
// consolidation and NodeOverlay are upstream's alpha features).
type Gates struct {
	// SpotToSpot lets consolidation replace a spot node by a cheaper spot node, among at least
	// --spot-to-spot-min-types cheaper types.
	SpotToSpot bool
	// NodeOverlay applies the cluster's NodeOverlays to the instance types planned with.
	NodeOverlay bool
	// Ignored names the gates enabled that have no meaning here.
	Ignored []string
}

// withoutMeaning are upstream's gates for features this project does not have.
var withoutMeaning = []string{"NodeRepair", "ReservedCapacity", "StaticCapacity", "CapacityBuffer"}

// Parse reads "Name=bool,..." as upstream does; an unknown gate is an error.
func Parse(value string) (Gates, error) {
	gates := Gates{}
	for _, pair := range strings.Split(value, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, raw, ok := strings.Cut(pair, "=")
		enabled, err := strconv.ParseBool(raw)
		if !ok || err != nil {
			return gates, fmt.Errorf("--feature-gates takes Name=true|false pairs, not %q", pair)
		}
		switch {
		case name == "SpotToSpotConsolidation":
			gates.SpotToSpot = enabled
		case name == "NodeOverlay":
			gates.NodeOverlay = enabled
		case slices.Contains(withoutMeaning, name):
			if enabled {
				gates.Ignored = append(gates.Ignored, name)
			}
		default:
			return gates, fmt.Errorf("--feature-gates: unknown gate %q (SpotToSpotConsolidation, NodeOverlay, %s)", name, strings.Join(withoutMeaning, ", "))
		}
	}
	return gates, nil
}

// Warnings say, for each gate enabled that has no meaning here, that it does nothing.
func (g Gates) Warnings() []string {
	var out []string
	for _, gate := range g.Ignored {
		out = append(out, fmt.Sprintf("feature gate %s=true has no effect here: this project has no such feature", gate))
	}
	return out
}
