package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
	"karpenter.sh/karpenter/test/sandbox"
)

// dashboardQueries are the queries of the chart's Grafana dashboards, by dashboard and panel,
// their variables given the values "All" has: every nodepool and namespace, and a rate
// window that spans the test.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "charts", "karpenter", "dashboards", "*.json"))
	if err != nil || len(files) != 4 {
		t.Fatalf("dashboards %v (%v), want capacity, performance, disruption and metrics-driven", files, err)
	}
	variables := strings.NewReplacer(`"$nodepool"`, `".*"`, `"$namespace"`, `".*"`, "$__rate_interval", "10m")
	queries := map[string]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var dashboard struct {
			Title  string `json:"title"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(data, &dashboard); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, panel := range dashboard.Panels {
			for i, target := range panel.Targets {
				queries[fmt.Sprintf("%s / %s / %d", dashboard.Title, panel.Title, i)] = variables.Replace(target.Expr)
			}
		}
	}
	return queries
}

// TestDashboardPanelsShowALaunchAConsolidationAndAnInterruption plays a launch (the first
// refused for capacity), a consolidation and a spot interruption on the stack, with the
// examples' autoscalers running, then runs every panel's query of the chart's dashboards
// against the stack's Prometheus: each reads a karpenter_* family and returns data.
func TestDashboardPanelsShowALaunchAConsolidationAndAnInterruption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "dashboards"
	queries := dashboardQueries(t)
	for panel, query := range queries {
		if !strings.Contains(query, "karpenter_") {
			t.Errorf("%s reads no karpenter_* family: %s", panel, query)
		}
	}
	// The examples' autoscalers and producers, for the metrics-driven panels: created where
	// missing, never re-applied over the specs other tests of the suite change.
	for _, file := range []string{"queue-workers.yaml", "reserved-capacity.yaml", "pending-capacity.yaml", "scheduled-capacity.yaml"} {
		for _, object := range example(t, file) {
			existing := &unstructured.Unstructured{}
			existing.SetGroupVersionKind(object.GroupVersionKind())
			key := client.ObjectKeyFromObject(object)
			if key.Namespace == "" {
				// The examples' kinds are namespaced; apply puts them in the sandbox's namespace.
				key.Namespace = sandbox.Namespace
			}
			err := stack.Env.Client.Get(ctx, key, existing)
			if apierrors.IsNotFound(err) {
				apply(t, []*unstructured.Unstructured{object})
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}

	// A launch EC2 has no capacity for: the cloud call's error.
	const refused = name + "-refused"
	createProvisioner(t, builders.ProvisionerOptions{Name: refused, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"c5.large"}},
		{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-west-2c"}},
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
	}})
	fault, err := stack.Emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, InstanceType: "c5.large", AvailabilityZone: "us-west-2c",
		CapacityType: v1alpha5.CapacityTypeOnDemand, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stack.Emulator.RemoveFault(fault) })
	refusedPod := builders.Pod(builders.PodOptions{Name: refused, Namespace: sandbox.Namespace,
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: refused}, Requests: builders.Resources("cpu", "1")})
	createPods(t, refusedPod)
	eventually.Holds(t, "the refused launch counted", func() (bool, string, error) {
		s, problem := find(scrapeController(t), "karpenter_cloudprovider_errors_total", map[string]string{"method": "Create", "error": "InsufficientCapacityError"})
		return problem == "" && s.value >= 1, problem, nil
	}, eventually.Timeout(waitTimeout))
	// A pending pod holds consolidation back everywhere: it goes once its launch was refused.
	if err := stack.Env.Client.Delete(ctx, refusedPod); err != nil {
		t.Fatal(err)
	}

	// The launch: m5.large on demand.
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
	}})
	selector := map[string]string{v1alpha5.ProvisionerNameLabelKey: name}
	// An m5.large (2 vCPUs) holds one 1200m pod: two nodes.
	deployment := builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: 2, Pod: builders.PodOptions{
		NodeSelector: selector, Requests: builders.Resources("cpu", "1200m"),
	}})
	createObject(t, deployment)
	nodes := distinctNodes(t, waitApp(t, name, 2), 2)

	// The consolidation: one pod goes, its node is empty and consolidation deletes it.
	if err := stack.Env.Client.Patch(ctx, deployment, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatal(err)
	}
	enable := []byte(`{"spec":{"consolidation":{"enabled":true,"budget":"100%"}}}`)
	if err := stack.Env.Client.Patch(ctx, &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, enable)); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "one of the two nodes consolidated away", func() (bool, string, error) {
		nodeList := &corev1.NodeList{}
		if err := stack.Env.Client.List(ctx, nodeList, client.MatchingLabels(selector)); err != nil {
			return false, "", err
		}
		var why []string
		for _, s := range scrapeController(t)["karpenter_consolidation_skipped_nodes"] {
			if s.value > 0 {
				why = append(why, s.String())
			}
		}
		return len(nodeList.Items) == 1, fmt.Sprintf("%d nodes; nodes consolidation skipped: %v", len(nodeList.Items), why), nil
	}, eventually.Timeout(waitTimeout))

	// The interruption: EC2 reclaims the instance of the node left.
	remaining := &corev1.NodeList{}
	if err := stack.Env.Client.List(ctx, remaining, client.MatchingLabels(selector)); err != nil || len(remaining.Items) != 1 {
		t.Fatalf("nodes left %v (%v)", len(remaining.Items), err)
	}
	if _, err := stack.Emulator.Interrupt(sandbox.InterruptionQueue, instanceIDOf(&remaining.Items[0]), awsemulator.InterruptSpot, ""); err != nil {
		t.Fatal(err)
	}
	t.Logf("launched %v, consolidated one, interrupted %s", nodeNames(nodes), remaining.Items[0].Name)

	prometheusClient, err := promapi.NewClient(promapi.Config{Address: stack.Env.Prometheus.URL})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(prometheusClient)
	for panel, query := range queries {
		t.Run(panel, func(t *testing.T) {
			eventually.Holds(t, "the panel's query returns data", func() (bool, string, error) {
				result, _, err := api.Query(ctx, query, time.Time{})
				if err != nil {
					return false, "", fmt.Errorf("%s: %w", query, err)
				}
				vector, _ := result.(model.Vector)
				for _, sample := range vector {
					if !math.IsNaN(float64(sample.Value)) && !math.IsInf(float64(sample.Value), 0) {
						return true, "", nil
					}
				}
				return false, fmt.Sprintf("%s returned %v", query, result), nil
			}, eventually.Timeout(2*time.Minute))
		})
	}
}
