package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
	"karpenter.sh/karpenter/test/scale/scaletest"
)

// series is one sample of a scrape: its labels and value (a counter's, a gauge's, or a
// histogram's or summary's count).
type series struct {
	labels map[string]string
	value  float64
}

func (s series) String() string {
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, fmt.Sprintf("%s=%q", k, s.labels[k]))
	}
	return fmt.Sprintf("{%s} %g", strings.Join(pairs, ","), s.value)
}

// scrapeController reads the controller's /metrics: the series of each family, by name.
func scrapeController(t *testing.T) map[string][]series {
	t.Helper()
	out, err := scrapeControllerOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scrapeControllerOnce is scrapeController's one attempt, for a poll to retry.
func scrapeControllerOnce(ctx context.Context) (map[string][]series, error) {
	families, _, err := scaletest.Scrape(ctx, "http://"+stack.MetricsAddress+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string][]series{}
	for name, family := range families {
		for _, m := range family.GetMetric() {
			s := series{labels: map[string]string{}}
			for _, pair := range m.GetLabel() {
				s.labels[pair.GetName()] = pair.GetValue()
			}
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_SUMMARY:
				s.value = float64(m.GetSummary().GetSampleCount())
			}
			out[name] = append(out[name], s)
		}
	}
	return out, nil
}

// find is the first series of a family whose labels include want, and a description of the
// family when none does.
func find(scrape map[string][]series, family string, want map[string]string) (series, string) {
	for _, s := range scrape[family] {
		matches := true
		for k, v := range want {
			if got, ok := s.labels[k]; !ok || (v != "*" && got != v) {
				matches = false
			}
		}
		if matches {
			return s, ""
		}
	}
	var have []string
	for _, s := range scrape[family] {
		have = append(have, s.String())
	}
	return series{}, fmt.Sprintf("no series %s%v among %d: %s", family, want, len(have), strings.Join(have[:min(len(have), 5)], "; "))
}

// TestUpstreamMetricsDescribeALaunchedNode launches a node for a pod of a Provisioner and
// deletes it again, then reads the controller's /metrics for the families and labels that
// upstream Karpenter's dashboards query, the Provisioner's name in their nodepool label: the
// node's, and its NodeClaim's from its creation to its termination.
func TestUpstreamMetricsDescribeALaunchedNode(t *testing.T) {
	t.Parallel()
	const name = "metrics"
	createProvisioner(t, builders.ProvisionerOptions{Name: name})
	pod := builders.Pod(builders.PodOptions{Name: name + "-pod", Namespace: sandbox.Namespace,
		NodeSelector: map[string]string{"karpenter.sh/provisioner-name": name},
		Requests:     builders.Resources("cpu", "1", "memory", "1Gi")})
	pod.Spec.Containers[0].Resources.Limits = builders.Resources("cpu", "2", "memory", "2Gi")
	createPods(t, pod)
	node := waitRunning(t, pod)[pod.Name]
	zone := node.Labels[corev1.LabelTopologyZone]

	nodeLabels := map[string]string{"node_name": node.Name, "nodepool": name, "zone": zone, "instance_type": node.Labels[corev1.LabelInstanceTypeStable],
		"capacity_type": "*", "arch": "*", "phase": "*", "managed": "true"}
	with := func(labels map[string]string, more ...string) map[string]string {
		out := map[string]string{}
		for k, v := range labels {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	checks := []struct {
		family string
		labels map[string]string
		// atLeast is the least value wanted.
		atLeast float64
	}{
		{"karpenter_build_info", map[string]string{"version": "*", "goversion": "*", "goarch": "*", "commit": "*"}, 1},
		{"karpenter_nodes_created_total", map[string]string{"nodepool": name, "zone": zone}, 1},
		{"karpenter_nodes_allocatable", with(nodeLabels, "resource_type", "cpu"), 1},
		{"karpenter_nodes_total_pod_requests", with(nodeLabels, "resource_type", "cpu"), 1},
		{"karpenter_nodes_total_pod_limits", with(nodeLabels, "resource_type", "memory"), 2 << 30},
		{"karpenter_nodes_total_daemon_requests", with(nodeLabels, "resource_type", "cpu"), 0},
		{"karpenter_nodes_total_daemon_limits", with(nodeLabels, "resource_type", "cpu"), 0},
		{"karpenter_nodes_system_overhead", with(nodeLabels, "resource_type", "memory"), 0},
		{"karpenter_pods_state", map[string]string{"name": pod.Name, "namespace": pod.Namespace, "node": node.Name, "nodepool": name, "zone": zone, "phase": "Running", "ready": "*", "owner": "*", "scheduled": "*", "instance_type": "*", "capacity_type": "*", "arch": "*", "managed": "*"}, 1},
		{"karpenter_pods_startup_duration_seconds", map[string]string{}, 1},
		{"karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "provisioning", "method": "Create", "provider": "aws"}, 1},
		// The node's NodeClaim, through its life.
		{"karpenter_nodeclaims_created_total", map[string]string{"reason": "provisioned", "nodepool": name, "min_values_relaxed": "false"}, 1},
		{"karpenter_nodeclaims_launched_total", map[string]string{"nodepool": name}, 1},
		{"karpenter_nodeclaims_registered_total", map[string]string{"nodepool": name}, 1},
		{"karpenter_nodeclaims_initialized_total", map[string]string{"nodepool": name}, 1},
	}
	eventually.Holds(t, "the launch's metrics are served", func() (bool, string, error) {
		scrape := scrapeController(t)
		var missing []string
		for _, c := range checks {
			s, problem := find(scrape, c.family, c.labels)
			if problem != "" {
				missing = append(missing, problem)
			} else if s.value < c.atLeast {
				missing = append(missing, fmt.Sprintf("%s %s, want at least %g", c.family, s, c.atLeast))
			}
		}
		return len(missing) == 0, strings.Join(missing, "\n"), nil
	}, eventually.Timeout(time.Minute))

	if err := stack.Env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if err := stack.Env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	waitGone(t, node)
	eventually.Holds(t, "the termination's metrics are served", func() (bool, string, error) {
		scrape := scrapeController(t)
		var missing []string
		for _, c := range []struct {
			family string
			labels map[string]string
		}{
			{"karpenter_nodes_terminated_total", map[string]string{"nodepool": name, "zone": zone}},
			{"karpenter_nodes_lifetime_duration_seconds", map[string]string{"nodepool": name}},
			{"karpenter_nodeclaims_terminated_total", map[string]string{"nodepool": name, "zone": zone, "capacity_type": node.Labels[v1alpha5.CapacityTypeLabelKey]}},
			{"karpenter_nodeclaims_termination_duration_seconds", map[string]string{"nodepool": name}},
		} {
			if s, problem := find(scrape, c.family, c.labels); problem != "" || s.value < 1 {
				missing = append(missing, problem)
			}
		}
		if s, problem := find(scrape, "karpenter_pods_state", map[string]string{"name": pod.Name}); problem == "" {
			missing = append(missing, fmt.Sprintf("the deleted pod's state is still served: %s", s))
		}
		return len(missing) == 0, strings.Join(missing, "\n"), nil
	}, eventually.Timeout(time.Minute))
}
