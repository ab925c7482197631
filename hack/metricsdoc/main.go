// Command metricsdoc writes docs/reference/metrics.md: every karpenter_* family the controller
// registers, with its type, labels and help, read from the collectors themselves. `make
// generate` runs it; its test fails when the page is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"karpenter.sh/karpenter/hack/metricsdoc/recording"
	// The controller's packages, every family among them.
	_ "karpenter.sh/karpenter/pkg/operator"
)

// upstreamFamilies are the families named as upstream Karpenter's (v1.14 reference/metrics.md),
// with upstream's labels or more; the others are this project's own.
var upstreamFamilies = []string{
	"karpenter_build_info", "karpenter_nodes_created_total", "karpenter_nodes_terminated_total",
	"karpenter_nodes_lifetime_duration_seconds", "karpenter_nodes_allocatable", "karpenter_nodes_total_pod_requests",
	"karpenter_nodes_total_pod_limits", "karpenter_nodes_total_daemon_requests", "karpenter_nodes_total_daemon_limits",
	"karpenter_nodes_system_overhead", "karpenter_pods_state", "karpenter_pods_startup_duration_seconds",
	"karpenter_cloudprovider_duration_seconds", "karpenter_cloudprovider_errors_total",
	"karpenter_cloudprovider_instance_type_offering_price_estimate",
	"karpenter_nodeclaims_created_total", "karpenter_nodeclaims_disrupted_total", "karpenter_nodeclaims_terminated_total",
	"karpenter_nodeclaims_termination_duration_seconds", "karpenter_nodepools_usage", "karpenter_nodepools_limit",
	"karpenter_nodepools_allowed_disruptions", "karpenter_voluntary_disruption_decisions_total",
	"karpenter_voluntary_disruption_eligible_nodes",
}

type family struct {
	name, kind, help string
	labels           []string
}

var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// families are the karpenter_* families registered, sorted by name.
func families() ([]family, error) {
	var out []family
	for _, c := range recording.Collectors {
		kind := kindOf(c)
		descs := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(descs); close(descs) }()
		for desc := range descs {
			m := descPattern.FindStringSubmatch(desc.String())
			if m == nil {
				return nil, fmt.Errorf("reading %s", desc)
			}
			name, err := strconv.Unquote(m[1])
			if err != nil {
				return nil, err
			}
			help, err := strconv.Unquote(m[2])
			if err != nil {
				return nil, err
			}
			if !strings.HasPrefix(name, "karpenter_") {
				continue
			}
			var labels []string
			if m[3] != "" {
				labels = strings.Split(m[3], ",")
			}
			out = append(out, family{name: name, kind: kind, help: help, labels: labels})
		}
	}
	slices.SortFunc(out, func(a, b family) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// kindOf is a collector's type: a vector's by its Go type, a single metric's by what it writes
// (the interfaces of counters and gauges, histograms and summaries overlap).
func kindOf(c prometheus.Collector) string {
	switch typed := c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	case interface{ ValueType() prometheus.ValueType }:
		// A family of constant series (the state families), empty until a pass sets it.
		return strings.ToLower(typed.ValueType().ToDTO().String())
	}
	metrics := make(chan prometheus.Metric, 16)
	go func() { c.Collect(metrics); close(metrics) }()
	kind := "untyped"
	for metric := range metrics {
		var written dto.Metric
		if metric.Write(&written) != nil {
			continue
		}
		switch {
		case written.Counter != nil:
			kind = "counter"
		case written.Gauge != nil:
			kind = "gauge"
		case written.Histogram != nil:
			kind = "histogram"
		case written.Summary != nil:
			kind = "summary"
		}
	}
	return kind
}

// render is the page.
func render() (string, error) {
	all, err := families()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(`# Metrics

The controller serves these families on ` + "`/metrics`" + ` (port ` + "`http-metrics`" + `, 8080), besides
controller-runtime's (` + "`controller_runtime_*`, `workqueue_*`" + `) and client-go's. Those marked *upstream*
have upstream Karpenter's name and at least its labels, so dashboards and alerts written for
upstream read them; their ` + "`nodepool`" + ` label holds the name of the Provisioner that launched the
node (or of its NodePool). ` + "`karpenter_nodeclaims_{launched,registered,initialized}_total`" + ` are upstream
v0.3x's ` + "`karpenter_nodeclaims_{launched,registered,initialized}`" + ` (by ` + "`nodepool`" + `), named as v1 names counters;
upstream v1 no longer has them. Generated from the collectors by ` + "`make generate`" + ` (hack/metricsdoc);
its test fails when this page is stale.

| family | type | labels | | meaning |
| --- | --- | --- | --- | --- |
`)
	for _, f := range all {
		labels := "none"
		if len(f.labels) > 0 {
			labels = "`" + strings.Join(f.labels, "`, `") + "`"
		}
		origin := ""
		if slices.Contains(upstreamFamilies, f.name) {
			origin = "upstream"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.name, f.kind, labels, origin, strings.ReplaceAll(f.help, "|", `\|`))
	}
	return b.String(), nil
}

func main() {
	out := flag.String("out", "docs/reference/metrics.md", "the page to write")
	flag.Parse()
	page, err := render()
	if err == nil {
		err = os.WriteFile(*out, []byte(page), 0o644) //nolint:gosec // G306: a document of the repository.
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "metricsdoc: %v\n", err)
		os.Exit(1)
	}
}
