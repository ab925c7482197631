package environment_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// pollTimeout is generous: the control plane's first reconciles are slow on a loaded machine.
const pollTimeout = time.Minute

// TestControlPlane starts every component once and checks each does its job, sharing the
// environment because startup dominates the runtime.
func TestControlPlane(t *testing.T) {
	t.Parallel()
	metrics := servedGauge(t, 42.5)
	env := environment.New(t, environment.Options{
		Scheduler:         true,
		ControllerManager: true,
		Kwok:              true,
		Prometheus: &environment.PrometheusOptions{
			ScrapeConfigs: []environment.ScrapeConfig{{
				JobName: "test",
				Targets: []string{metrics},
			}},
		},
	})
	ctx := t.Context()

	t.Run("apiserver reports the version built by test-assets", func(t *testing.T) {
		discoveryClient, err := discovery.NewDiscoveryClientForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		info, err := discoveryClient.ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if want := pinnedKubernetesVersion(t); info.GitVersion != want {
			t.Errorf("gitVersion = %q, want %q", info.GitVersion, want)
		}
	})

	t.Run("CRDs from config/crd are established", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(repositoryRoot(t), "config", "crd", "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(data, crd); err != nil {
				t.Fatalf("decoding %s, %v", file, err)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
				t.Fatalf("CRD of %s, %v", file, err)
			}
			if !crdEstablished(crd) {
				t.Errorf("CRD %s is not established", crd.Name)
			}
		}
	})

	requests := builders.Resources("cpu", "500m", "memory", "1Gi")
	pod := builders.Pod(builders.PodOptions{Name: "standalone", Requests: requests})
	deployment := builders.Deployment(builders.DeploymentOptions{Name: "web", Replicas: 2, Pod: builders.PodOptions{Requests: requests}})
	t.Run("pods are unschedulable without nodes", func(t *testing.T) {
		for _, object := range []client.Object{pod, deployment} {
			if err := env.Client.Create(ctx, object); err != nil {
				t.Fatal(err)
			}
		}
		eventually.Holds(t, "pod is Unschedulable", func() (bool, string, error) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, "", err
			}
			condition := podCondition(pod, corev1.PodScheduled)
			return condition != nil && condition.Status == corev1.ConditionFalse &&
				condition.Reason == corev1.PodReasonUnschedulable, "", nil
		}, eventually.Timeout(pollTimeout))
	})

	t.Run("controller-manager creates a deployment's pods", func(t *testing.T) {
		eventually.Holds(t, "deployment has 2 pods", func() (bool, string, error) {
			pods := &corev1.PodList{}
			err := env.Client.List(ctx, pods, client.InNamespace(deployment.Namespace), client.MatchingLabels(deployment.Spec.Selector.MatchLabels))
			return len(pods.Items) == 2, fmt.Sprintf("%d pods", len(pods.Items)), err
		}, eventually.Timeout(pollTimeout))
	})

	t.Run("pods run on a kwok node", func(t *testing.T) {
		node := environment.KwokNode("kwok-node", map[string]string{"pool": "test"}, corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
		})
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		eventually.Holds(t, "node is Ready", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node)
			return nodes.IsReady(node), "", err
		}, eventually.Timeout(pollTimeout))
		eventually.Holds(t, "pod is Running on the node", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)
			return pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName == node.Name, fmt.Sprintf("%s on node %q", pod.Status.Phase, pod.Spec.NodeName), err
		}, eventually.Timeout(pollTimeout))
		eventually.Holds(t, "deployment has 2 available replicas", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(deployment), deployment)
			return deployment.Status.AvailableReplicas == 2, fmt.Sprintf("%d available", deployment.Status.AvailableReplicas), err
		}, eventually.Timeout(pollTimeout))
	})

	t.Run("prometheus scrapes a target and answers PromQL", func(t *testing.T) {
		expectQueryValue(t, env.Prometheus.URL, "karpenter_environment_test_value", 42.5)
	})
}

// TestStandalonePrometheus runs in parallel: most of its time is Prometheus's first-scrape delay.
func TestStandalonePrometheus(t *testing.T) {
	t.Parallel()
	metrics := servedGauge(t, 7)
	prometheus := environment.StartPrometheus(t, environment.PrometheusOptions{
		ScrapeConfigs: []environment.ScrapeConfig{{JobName: "test", Targets: []string{metrics}}},
	})
	expectQueryValue(t, prometheus.URL, "karpenter_environment_test_value", 7)

	if err := prometheus.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(prometheus.URL + "/-/ready"); err == nil {
		t.Error("Prometheus still answers after Stop")
	}
}

// servedGauge serves karpenter_environment_test_value in the Prometheus text format and
// returns the listener's host:port.
func servedGauge(t *testing.T, value float64) string {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE karpenter_environment_test_value gauge")
		fmt.Fprintf(w, "karpenter_environment_test_value %g\n", value)
	}))
	t.Cleanup(server.Close)
	return strings.TrimPrefix(server.URL, "http://")
}

// expectQueryValue waits until an instant query through Prometheus's HTTP API returns one
// sample with the value.
func expectQueryValue(t *testing.T, prometheusURL, query string, value float64) {
	t.Helper()
	promClient, err := promapi.NewClient(promapi.Config{Address: prometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(promClient)
	eventually.Holds(t, fmt.Sprintf("%s returns %g", query, value), func() (bool, string, error) {
		result, _, err := api.Query(t.Context(), query, time.Now())
		if err != nil {
			return false, "", err
		}
		vector, ok := result.(model.Vector)
		return ok && len(vector) == 1 && float64(vector[0].Value) == value, fmt.Sprint(result), nil
	}, eventually.Timeout(pollTimeout))
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, condition := range crd.Status.Conditions {
		if condition.Type == apiextensionsv1.Established {
			return condition.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func podCondition(pod *corev1.Pod, conditionType corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == conditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if dir == filepath.Dir(dir) {
			t.Fatal("no go.mod above the working directory")
		}
	}
}

// pinnedKubernetesVersion is the k8s.io/kubernetes version hack/kube/go.mod builds.
func pinnedKubernetesVersion(t *testing.T) string {
	t.Helper()
	goMod, err := os.Open(filepath.Join(repositoryRoot(t), "hack", "kube", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer goMod.Close()
	scanner := bufio.NewScanner(goMod)
	for scanner.Scan() {
		line, _, _ := strings.Cut(scanner.Text(), "//")
		fields := strings.Fields(line)
		for i := 0; i+1 < len(fields); i++ {
			if fields[i] == "k8s.io/kubernetes" {
				return fields[i+1]
			}
		}
	}
	t.Fatal("hack/kube/go.mod does not require k8s.io/kubernetes")
	return ""
}
