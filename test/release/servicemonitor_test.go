package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/metrics/clients"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// serviceMonitor is the part of a monitoring.coreos.com/v1 ServiceMonitor the Prometheus
// Operator turns into a scrape configuration.
type serviceMonitor struct {
	Spec struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			HonorLabels bool   `json:"honorLabels"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// TestServiceMonitorScrapePath scrapes two controller replicas (a leader and the replica it took
// over from, both still reporting around a failover) through the scrape configuration the
// Prometheus Operator generates from the shipped config/monitoring/servicemonitor.yaml for the
// release's metrics Service, then runs every query of docs/examples through the
// HorizontalAutoscaler's Prometheus client: each must return exactly one sample. Without
// honorLabels, the documented queries select nothing.
func TestServiceMonitorScrapePath(t *testing.T) {
	t.Parallel()
	monitor := shippedServiceMonitor(t)
	if len(monitor.Spec.Endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, want 1", len(monitor.Spec.Endpoints))
	}
	endpoint := monitor.Spec.Endpoints[0]
	service := metricsService(t)
	queries := exampleQueries(t)

	// Every gauge of every example's MetricsProducer, as the leader would export them.
	gauges := []*prometheus.GaugeVec{producers.QueueLength, producers.QueueOldestMessageAgeSeconds, producers.ScheduledReplicasValue, producers.PendingCapacityNodes}
	for _, g := range producers.ReservedCapacity {
		gauges = append(gauges, g.Reserved, g.Capacity, g.Utilization)
	}
	for _, name := range queries.producers {
		var samples []producers.Sample
		for _, g := range gauges {
			samples = append(samples, producers.Sample{Gauge: g, Value: 0.5})
		}
		producers.Export(types.NamespacedName{Namespace: "default", Name: name}, samples)
	}
	// And the HorizontalAutoscalers' own gauges, which queries that add the current replicas
	// read; the controller registers them in its process, this test in a registry of its own.
	autoscalers := prometheus.NewRegistry()
	currentReplicas := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "karpenter_horizontalautoscaler_current_replicas"}, []string{"name", "namespace"})
	autoscalers.MustRegister(currentReplicas)
	for _, name := range queries.autoscalers {
		currentReplicas.WithLabelValues(name, "default").Set(0.5)
	}
	replicas := []string{environment.ServeMetricsRegistry(t, autoscalers), environment.ServeMetricsRegistry(t, autoscalers)}

	shipped := operatorScrapeConfig(monitor, service, replicas, endpoint.HonorLabels, endpoint.Port, endpoint.Path)
	prometheus := environment.StartPrometheus(t, environment.PrometheusOptions{ScrapeConfigs: []environment.ScrapeConfig{shipped}})
	client := newPrometheusClient(t, prometheus.URL)

	t.Run("a documented selector without max sees one series per replica", func(t *testing.T) {
		api := promv1.NewAPI(newPrometheusAPIClient(t, prometheus.URL))
		eventually.Holds(t, "two series, one per scraped replica, with the operator's target labels", func() (bool, string, error) {
			// The HorizontalAutoscaler's client refuses several series (and quotes them cut
			// short); read them whole through the Prometheus API instead.
			result, _, err := api.Query(t.Context(), `karpenter_queue_length{namespace="default",name="jobs"}`, time.Time{})
			if err != nil {
				return false, "", err
			}
			vector, ok := result.(model.Vector)
			if !ok || len(vector) != 2 {
				return false, fmt.Sprintf("result %v, want 2 series", result), nil
			}
			for _, sample := range vector {
				for name, value := range map[model.LabelName]string{"service": "karpenter", "endpoint": "http-metrics", "job": "karpenter", "container": "controller"} {
					if got := string(sample.Metric[name]); got != value {
						return false, "", fmt.Errorf("series %s has %s=%q, want %q", sample.Metric, name, got, value)
					}
				}
				if !strings.HasPrefix(string(sample.Metric["pod"]), "karpenter-") {
					return false, "", fmt.Errorf("series %s lacks the operator's pod label", sample.Metric)
				}
			}
			// The HorizontalAutoscaler's client refuses it: the documented queries aggregate.
			if _, err := client.Query(t.Context(), `karpenter_queue_length{namespace="default",name="jobs"}`); err == nil || !strings.Contains(err.Error(), "returned 2 series") {
				return false, "", fmt.Errorf("the autoscaler's client answered %w, want 2 series refused", err)
			}
			return true, "", nil
		}, eventually.Timeout(time.Minute))
	})
	for _, query := range queries.queries {
		t.Run("example query "+query, func(t *testing.T) {
			// Every series is 0.5, and the examples add their selectors up.
			want := 0.5 * float64(selectors(t, query))
			eventually.Holds(t, fmt.Sprintf("one sample of %g", want), func() (bool, string, error) {
				value, err := client.Query(t.Context(), query)
				if err != nil {
					return false, err.Error(), nil
				}
				return value == want, fmt.Sprintf("value %v", value), nil
			}, eventually.Timeout(time.Minute))
		})
	}

	t.Run("without honorLabels the namespace label is the Service's", func(t *testing.T) {
		t.Parallel()
		renamed := operatorScrapeConfig(monitor, service, replicas, false, endpoint.Port, endpoint.Path)
		prometheus := environment.StartPrometheus(t, environment.PrometheusOptions{ScrapeConfigs: []environment.ScrapeConfig{renamed}})
		client := newPrometheusClient(t, prometheus.URL)
		// Wait until the scrape happened, so that "no samples" below is not just "not yet".
		eventually.Holds(t, "the gauge scraped with exported_namespace", func() (bool, string, error) {
			_, err := client.Query(t.Context(), `max(karpenter_queue_length{exported_namespace="default",name="jobs"})`)
			if err != nil {
				return false, err.Error(), nil
			}
			return true, "", nil
		}, eventually.Timeout(time.Minute))
		// A selector that matches nothing: no samples, or NaN where scalar() wraps it.
		for _, query := range queries.queries {
			if _, err := client.Query(t.Context(), query); err == nil || (!strings.Contains(err.Error(), "no samples") && !strings.Contains(err.Error(), "NaN")) {
				t.Errorf("query %s without honorLabels: %v, want nothing selected", query, err)
			}
		}
	})
}

// shippedServiceMonitor reads config/monitoring/servicemonitor.yaml.
func shippedServiceMonitor(t *testing.T) serviceMonitor {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repositoryRoot, "config", "monitoring", "servicemonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var monitor serviceMonitor
	if err := yaml.Unmarshal(data, &monitor); err != nil {
		t.Fatalf("decoding the ServiceMonitor, %v", err)
	}
	return monitor
}

// metricsService is the release's Service in front of the controller's /metrics, named as upstream's.
func metricsService(t *testing.T) corev1.Service {
	t.Helper()
	for _, object := range decode(t, render(t, "v0.0.0-test")) {
		if object.GetKind() == "Service" && object.GetName() == "karpenter" {
			var service corev1.Service
			convert(t, object, &service)
			return service
		}
	}
	t.Fatal("the release has no karpenter Service")
	return corev1.Service{}
}

// examples are the queries of the HorizontalAutoscalers in docs/examples and the names of the
// MetricsProducers there, all in the default namespace.
type examples struct {
	queries, producers, autoscalers []string
}

// selectors counts the series selectors of a query.
func selectors(t *testing.T, query string) int {
	t.Helper()
	expr, err := parser.ParseExpr(query)
	if err != nil {
		t.Fatalf("parsing %s, %v", query, err)
	}
	n := 0
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if _, ok := node.(*parser.VectorSelector); ok {
			n++
		}
		return nil
	})
	return n
}

func exampleQueries(t *testing.T) examples {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repositoryRoot, "docs", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("listing docs/examples: %v (%d files)", err, len(files))
	}
	var found examples
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, object := range decode(t, data) {
			switch object.GetKind() {
			case "MetricsProducer":
				found.producers = append(found.producers, object.GetName())
			case "HorizontalAutoscaler":
				found.autoscalers = append(found.autoscalers, object.GetName())
				metrics, _, _ := unstructured.NestedSlice(object.Object, "spec", "metrics")
				for _, m := range metrics {
					query, _, _ := unstructured.NestedString(m.(map[string]any), "prometheus", "query")
					found.queries = append(found.queries, query)
				}
			}
		}
	}
	if len(found.queries) == 0 || len(found.producers) == 0 {
		t.Fatalf("docs/examples hold %d queries and %d MetricsProducers", len(found.queries), len(found.producers))
	}
	return found
}

// labelName is how Kubernetes service discovery spells a label in its meta label names.
var labelName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// operatorScrapeConfig is the scrape configuration the Prometheus Operator generates for a
// ServiceMonitor endpoint (its generateServiceMonitorConfig), over static targets standing for
// the Service's endpoints: the labels Kubernetes endpoints discovery would attach are set on the
// targets, each replica's pod named after its port, and the operator's relabelling follows —
// keep the Service the selector matches and the named port, then add the namespace, service,
// pod, container, job and endpoint target labels.
func operatorScrapeConfig(monitor serviceMonitor, service corev1.Service, targets []string, honorLabels bool, port, path string) environment.ScrapeConfig {
	discovered := map[string]string{
		"__meta_kubernetes_namespace":                    service.Namespace,
		"__meta_kubernetes_service_name":                 service.Name,
		"__meta_kubernetes_pod_container_name":           "controller",
		"__meta_kubernetes_endpoint_port_name":           service.Spec.Ports[0].Name,
		"__meta_kubernetes_endpoint_address_target_kind": "Pod",
	}
	for key, value := range service.Labels {
		discovered["__meta_kubernetes_service_label_"+labelName.ReplaceAllString(key, "_")] = value
		discovered["__meta_kubernetes_service_labelpresent_"+labelName.ReplaceAllString(key, "_")] = "true"
	}
	relabel := []environment.RelabelConfig{
		// Discovery: each endpoint address is its own pod.
		{SourceLabels: []string{"__address__"}, Regex: `.*:(\d+)`, TargetLabel: "__meta_kubernetes_pod_name", Replacement: "karpenter-$1"},
		{SourceLabels: []string{"__meta_kubernetes_pod_name"}, TargetLabel: "__meta_kubernetes_endpoint_address_target_name"},
	}
	keys := make([]string, 0, len(monitor.Spec.Selector.MatchLabels))
	for key := range monitor.Spec.Selector.MatchLabels {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		name := labelName.ReplaceAllString(key, "_")
		relabel = append(relabel, environment.RelabelConfig{
			Action:       "keep",
			SourceLabels: []string{"__meta_kubernetes_service_label_" + name, "__meta_kubernetes_service_labelpresent_" + name},
			Regex:        "(" + monitor.Spec.Selector.MatchLabels[key] + ");true",
		})
	}
	relabel = append(relabel,
		environment.RelabelConfig{Action: "keep", SourceLabels: []string{"__meta_kubernetes_endpoint_port_name"}, Regex: port},
		environment.RelabelConfig{SourceLabels: []string{"__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"}, Separator: ";", Regex: "Pod;(.*)", TargetLabel: "pod"},
		environment.RelabelConfig{SourceLabels: []string{"__meta_kubernetes_namespace"}, TargetLabel: "namespace"},
		environment.RelabelConfig{SourceLabels: []string{"__meta_kubernetes_service_name"}, TargetLabel: "service"},
		environment.RelabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
		environment.RelabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_container_name"}, TargetLabel: "container"},
		environment.RelabelConfig{SourceLabels: []string{"__meta_kubernetes_service_name"}, TargetLabel: "job"},
		environment.RelabelConfig{TargetLabel: "endpoint", Replacement: port},
	)
	return environment.ScrapeConfig{
		JobName:        "serviceMonitor/" + service.Namespace + "/karpenter/0",
		Targets:        targets,
		Labels:         discovered,
		MetricsPath:    path,
		HonorLabels:    honorLabels,
		RelabelConfigs: relabel,
	}
}

// newPrometheusClient is the client a HorizontalAutoscaler queries through.
func newPrometheusAPIClient(t *testing.T, url string) promapi.Client {
	t.Helper()
	client, err := promapi.NewClient(promapi.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func newPrometheusClient(t *testing.T, url string) *clients.Prometheus {
	t.Helper()
	client, err := clients.NewPrometheus(context.Background(), clients.PrometheusOptions{URI: url})
	if err != nil {
		t.Fatal(err)
	}
	return client
}
