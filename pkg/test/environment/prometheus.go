package environment

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"
)

// PrometheusOptions configures a Prometheus server started for a test. Prometheus applies
// scrape targets in batches every 5 seconds, so the first samples appear about 5 seconds after
// it starts; with New, that overlaps the control plane's startup.
type PrometheusOptions struct {
	// ScrapeInterval applies to every scrape config and to rule evaluation. Defaults to one
	// second so that tests see new samples quickly.
	ScrapeInterval time.Duration
	ScrapeConfigs  []ScrapeConfig
}

// ScrapeConfig is one Prometheus scrape job over static targets.
type ScrapeConfig struct {
	JobName string
	// Targets are host:port addresses, e.g. a test's httptest.Server listener address.
	Targets []string
	// Labels are attached to every target before relabelling, e.g. the
	// __meta_kubernetes_* labels service discovery would have set, so that a test can run
	// the relabelling a Prometheus Operator ServiceMonitor produces over static targets.
	Labels map[string]string
	// MetricsPath defaults to /metrics.
	MetricsPath string
	// HonorLabels keeps a scraped sample's labels when they clash with the target's instead of
	// renaming them to exported_<name>, as a ServiceMonitor's honorLabels does.
	HonorLabels bool
	// RelabelConfigs rewrite the target's labels before the scrape, in order.
	RelabelConfigs []RelabelConfig
}

// RelabelConfig is one Prometheus relabel_config; empty fields take Prometheus' defaults
// (action replace, regex (.*), replacement $1, separator ;).
type RelabelConfig struct {
	SourceLabels []string `json:"source_labels,omitempty"`
	Separator    string   `json:"separator,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	TargetLabel  string   `json:"target_label,omitempty"`
	Replacement  string   `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234, for the HTTP API.
	URL string

	lifecycle *lifecycle
	path      string
	args      []string

	mu      sync.Mutex
	process *Process
}

// Stop stops the server, e.g. to test behaviour without metrics.
func (p *Prometheus) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.process.Stop()
}

// Restart starts a stopped server again on the same address and storage, and returns once it
// is ready.
func (p *Prometheus) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.process.Stop(); err != nil {
		return err
	}
	proc, err := startProcess(p.lifecycle, "prometheus", p.path, p.args, nil)
	if err != nil {
		return err
	}
	p.process = proc
	p.lifecycle.onStop(proc.Stop)
	return proc.waitHealthy(ctx, p.URL+"/-/ready")
}

// ServeMetricsRegistry serves controller-runtime's metrics registry, as the controller's
// /metrics does (with any extra registries), on a loopback port until the test ends, and returns its host:port for
// Prometheus to scrape.
func ServeMetricsRegistry(t testing.TB, extra ...prometheus.Gatherer) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gatherers := append(prometheus.Gatherers{metrics.Registry}, extra...)
	server := &http.Server{Handler: promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	return listener.Addr().String()
}

// StartPrometheus starts a Prometheus server on its own, without a control plane, and returns
// once it is ready. It is stopped when the test ends.
func StartPrometheus(t testing.TB, options PrometheusOptions) *Prometheus {
	t.Helper()
	root, err := RepositoryRoot()
	if err != nil {
		t.Fatalf("locating the repository, %v", err)
	}
	path, err := binaries{root: root}.systemBinary("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, err := newLifecycle(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(logTails(dir))
		}
	})
	prometheus, err := startPrometheus(context.Background(), l, path, options)
	if err != nil {
		t.Fatal(err)
	}
	return prometheus
}

// startPrometheus starts the server and waits for it to be ready. It does not call t.Fatal, so
// that it can run concurrently with other components.
func startPrometheus(ctx context.Context, l *lifecycle, path string, options PrometheusOptions) (*Prometheus, error) {
	dir, err := l.tempDir("prometheus")
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(dir, "prometheus.yml")
	config, err := prometheusConfig(options)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return nil, fmt.Errorf("writing the Prometheus configuration, %w", err)
	}
	address, err := FreeAddress()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config.file=" + configPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + address,
	}
	proc, err := startProcess(l, "prometheus", path, args, nil)
	if err != nil {
		return nil, err
	}
	l.onStop(proc.Stop)
	prometheus := &Prometheus{URL: "http://" + address, lifecycle: l, path: path, args: args, process: proc}
	if err := proc.waitHealthy(ctx, prometheus.URL+"/-/ready"); err != nil {
		return nil, err
	}
	return prometheus, nil
}

// prometheusConfig renders the configuration file for the options.
func prometheusConfig(options PrometheusOptions) ([]byte, error) {
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type scrapeConfig struct {
		JobName        string          `json:"job_name"`
		MetricsPath    string          `json:"metrics_path,omitempty"`
		HonorLabels    bool            `json:"honor_labels,omitempty"`
		StaticConfigs  []staticConfig  `json:"static_configs"`
		RelabelConfigs []RelabelConfig `json:"relabel_configs,omitempty"`
	}
	type globalConfig struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	}
	interval := options.ScrapeInterval
	if interval == 0 {
		interval = time.Second
	}
	config := struct {
		Global        globalConfig   `json:"global"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}{
		// Prometheus durations take no fractional units, so render in milliseconds.
		Global:        globalConfig{ScrapeInterval: fmt.Sprintf("%dms", interval.Milliseconds()), EvaluationInterval: fmt.Sprintf("%dms", interval.Milliseconds())},
		ScrapeConfigs: []scrapeConfig{},
	}
	for _, sc := range options.ScrapeConfigs {
		if sc.JobName == "" {
			return nil, fmt.Errorf("a Prometheus scrape config needs a job name")
		}
		config.ScrapeConfigs = append(config.ScrapeConfigs, scrapeConfig{
			JobName:        sc.JobName,
			MetricsPath:    sc.MetricsPath,
			HonorLabels:    sc.HonorLabels,
			StaticConfigs:  []staticConfig{{Targets: sc.Targets, Labels: sc.Labels}},
			RelabelConfigs: sc.RelabelConfigs,
		})
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("rendering the Prometheus configuration, %w", err)
	}
	return data, nil
}
