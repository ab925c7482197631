package release

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestChartShipsTheDashboards: with dashboards.enabled the chart renders one ConfigMap per
// dashboard, labeled for Grafana's sidecar, holding valid dashboard JSON whose every query
// parses and reads only families the metrics reference lists. test/e2e runs the queries.
func TestChartShipsTheDashboards(t *testing.T) {
	t.Parallel()
	reference := string(readFile(t, repositoryRoot+"/docs/reference/metrics.md"))
	families := regexp.MustCompile(`\bkarpenter_[a-z_]+`)
	release := helmTemplateArgs(t, "--set", "controller.image.repository="+testImage, "--set", "dashboards.enabled=true")
	var dashboards int
	for _, object := range release.objects {
		if object.GetKind() != "ConfigMap" || !strings.HasSuffix(object.GetName(), "-dashboard") {
			continue
		}
		dashboards++
		if object.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("ConfigMap %s lacks the sidecar's label grafana_dashboard=1", object.GetName())
		}
		data, _ := object.Object["data"].(map[string]any)
		for file, content := range data {
			var dashboard struct {
				Panels []struct {
					Title   string `json:"title"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			}
			if err := json.Unmarshal([]byte(content.(string)), &dashboard); err != nil || len(dashboard.Panels) == 0 {
				t.Fatalf("%s: %v, %d panels", file, err, len(dashboard.Panels))
			}
			for _, panel := range dashboard.Panels {
				for _, target := range panel.Targets {
					expr := strings.NewReplacer("$nodepool", ".*", "$namespace", ".*", "$__rate_interval", "5m").Replace(target.Expr)
					if _, err := parser.ParseExpr(expr); err != nil {
						t.Errorf("%s / %s: %v", file, panel.Title, err)
					}
					for _, family := range families.FindAllString(expr, -1) {
						family = strings.TrimSuffix(family, "_bucket")
						if !strings.Contains(reference, "`"+family+"`") {
							t.Errorf("%s / %s reads %s, which the controller does not serve", file, panel.Title, family)
						}
					}
				}
			}
		}
	}
	files, err := os.ReadDir(chart + "/dashboards")
	if err != nil {
		t.Fatal(err)
	}
	if dashboards != len(files) || dashboards != 4 {
		t.Errorf("%d dashboard ConfigMaps for %d files, want the 4 dashboards", dashboards, len(files))
	}
}
