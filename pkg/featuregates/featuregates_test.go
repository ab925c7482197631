package featuregates_test

import (
	"slices"
	"testing"

	"karpenter.sh/karpenter/pkg/featuregates"
)

func TestParse(t *testing.T) {
	gates, err := featuregates.Parse("")
	if err != nil || gates.SpotToSpot || gates.NodeOverlay {
		t.Errorf("no gates: %+v, %v; want upstream's defaults, spot-to-spot and NodeOverlay off", gates, err)
	}
	gates, err = featuregates.Parse("NodeOverlay=true, SpotToSpotConsolidation=true,NodeRepair=true,StaticCapacity=false")
	if err != nil || !gates.SpotToSpot || !gates.NodeOverlay || !slices.Equal(gates.Ignored, []string{"NodeRepair"}) {
		t.Errorf("gates %+v, %v; want NodeOverlay on, spot-to-spot on, NodeRepair ignored", gates, err)
	}
	for _, bad := range []string{"NodeOverlay", "NodeOverlay=maybe", "Unknown=true"} {
		if _, err := featuregates.Parse(bad); err == nil {
			t.Errorf("%q parsed, want an error", bad)
		}
	}
}
