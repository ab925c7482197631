package environment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMissingBinariesNameTheFix(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Present but not executable: as wrong as absent.
	if err := os.WriteFile(filepath.Join(root, "bin", "kube-apiserver"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := locateBinaries(binaries{root: root}, Options{Scheduler: true, ControllerManager: true, Kwok: true})
	if err == nil {
		t.Fatal("expected an error for missing binaries")
	}
	for _, want := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok", "make test-assets"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestPrometheusConfig(t *testing.T) {
	got, err := prometheusConfig(PrometheusOptions{
		ScrapeInterval: 500 * time.Millisecond,
		ScrapeConfigs: []ScrapeConfig{
			{JobName: "controller", Targets: []string{"127.0.0.1:8080"}},
			{JobName: "custom", Targets: []string{"127.0.0.1:9000", "127.0.0.1:9001"}, MetricsPath: "/custom"},
			{
				JobName: "relabelled", Targets: []string{"127.0.0.1:9002"}, HonorLabels: true,
				Labels: map[string]string{"__meta_kubernetes_namespace": "karpenter"},
				RelabelConfigs: []RelabelConfig{
					{SourceLabels: []string{"__meta_kubernetes_namespace"}, TargetLabel: "namespace"},
					{TargetLabel: "endpoint", Replacement: "metrics"},
				},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `global:
  evaluation_interval: 500ms
  scrape_interval: 500ms
scrape_configs:
- job_name: controller
  static_configs:
  - targets:
    - 127.0.0.1:8080
- job_name: custom
  metrics_path: /custom
  static_configs:
  - targets:
    - 127.0.0.1:9000
    - 127.0.0.1:9001
- honor_labels: true
  job_name: relabelled
  relabel_configs:
  - source_labels:
    - __meta_kubernetes_namespace
    target_label: namespace
  - replacement: metrics
    target_label: endpoint
  static_configs:
  - labels:
      __meta_kubernetes_namespace: karpenter
    targets:
    - 127.0.0.1:9002
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("configuration (-want +got):\n%s", diff)
	}
	if _, err := prometheusConfig(PrometheusOptions{ScrapeConfigs: []ScrapeConfig{{Targets: []string{"x:1"}}}}); err == nil {
		t.Error("expected an error for a scrape config without a job name")
	}
}

func TestKwokNode(t *testing.T) {
	node := KwokNode("n", map[string]string{"pool": "a"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})
	if node.Annotations[KwokNodeAnnotation] != "fake" {
		t.Errorf("annotations = %v, want %s=fake", node.Annotations, KwokNodeAnnotation)
	}
	if node.Labels["pool"] != "a" || node.Labels[corev1.LabelHostname] != "n" {
		t.Errorf("labels = %v", node.Labels)
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("taints = %v, want none", node.Spec.Taints)
	}
	if pods := node.Status.Allocatable[corev1.ResourcePods]; pods.Value() != defaultKwokNodePods {
		t.Errorf("allocatable pods = %s, want %d", pods.String(), defaultKwokNodePods)
	}
	if cpu := node.Status.Capacity[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("capacity cpu = %s, want 2", cpu.String())
	}
}

// TestFreePortsAreNeverHandedOutTwice: components started side by side must not be told to
// listen on one port, even when the kernel offers a port again as soon as it is closed.
func TestFreePortsAreNeverHandedOutTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port := FreePort(t)
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
}
