package statemetrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/statemetrics"
)

func gather(t *testing.T, family string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, pair := range m.GetLabel() {
				got[pair.GetName()] = pair.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			if m.GetSummary() != nil {
				return float64(m.GetSummary().GetSampleCount()), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestExportSumsEachNodesPodsAndFollowsThemAway: a node's requests and limits are its pods'
// that are not done, its DaemonSet pods' apart; a node without DaemonSet pods reports 0; a pod
// gone takes its series along; a pod's startup counts once, and only if it became ready after
// the controller started.
func TestExportSumsEachNodesPodsAndFollowsThemAway(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
		"karpenter.sh/provisioner-name": "default", corev1.LabelTopologyZone: "us-west-2a", corev1.LabelInstanceTypeStable: "m5.large"}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi")},
		}}
	empty := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	pod := func(name, cpu string, done, daemon bool, readyAt time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(start.Add(-time.Minute))},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}}}
		if done {
			p.Status.Phase = corev1.PodSucceeded
		}
		if daemon {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
		}
		return p
	}
	app := pod("app", "500m", false, false, start.Add(time.Second))
	agent := pod("agent", "100m", false, true, start.Add(-time.Hour))
	finished := pod("finished", "1", true, false, start.Add(time.Second))
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(node, empty, app, agent, finished).Build()
	controller, err := statemetrics.New(statemetrics.Options{Client: c, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// The summary is the process's: this run's count is what it adds (go test -count=3).
	startupsBefore, _ := gather(t, "karpenter_pods_startup_duration_seconds", nil)
	clk.Step(2 * time.Second)
	for range 2 {
		if err := controller.Export(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	n1 := map[string]string{"node_name": "n1", "nodepool": "default", "zone": "us-west-2a", "instance_type": "m5.large", "managed": "true"}
	for _, c := range []struct {
		family, resource string
		want             float64
	}{
		{"karpenter_nodes_total_pod_requests", "cpu", 0.6},
		{"karpenter_nodes_total_pod_limits", "cpu", 0.6},
		{"karpenter_nodes_total_daemon_requests", "cpu", 0.1},
		{"karpenter_nodes_total_daemon_limits", "memory", 0},
		{"karpenter_nodes_allocatable", "cpu", 1.93},
		{"karpenter_nodes_system_overhead", "memory", 1 << 30},
	} {
		labels := map[string]string{"resource_type": c.resource}
		for k, v := range n1 {
			labels[k] = v
		}
		if got, ok := gather(t, c.family, labels); !ok || got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("%s{%v} = %v (%t), want %v", c.family, labels, got, ok, c.want)
		}
	}
	if got, ok := gather(t, "karpenter_nodes_total_daemon_requests", map[string]string{"node_name": "n2", "resource_type": "cpu", "managed": "false"}); !ok || got != 0 {
		t.Errorf("the empty node's daemon requests = %v (%t), want a 0 series", got, ok)
	}
	if got, ok := gather(t, "karpenter_pods_state", map[string]string{"name": "app", "node": "n1", "nodepool": "default", "phase": "Running", "ready": "True"}); !ok || got != 1 {
		t.Errorf("karpenter_pods_state of app = %v (%t)", got, ok)
	}
	// app became ready after the start: counted once over two passes; agent before: not at all.
	if got, _ := gather(t, "karpenter_pods_startup_duration_seconds", nil); got-startupsBefore != 1 {
		t.Errorf("startups counted %v, want 1", got-startupsBefore)
	}
	if err := c.Delete(context.Background(), client.Object(app)); err != nil {
		t.Fatal(err)
	}
	if err := controller.Export(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := gather(t, "karpenter_pods_state", map[string]string{"name": "app"}); ok {
		t.Error("the deleted pod's state is still exported")
	}
	labels := map[string]string{"node_name": "n1", "resource_type": "cpu"}
	if got, _ := gather(t, "karpenter_nodes_total_pod_requests", labels); got < 0.1-1e-9 || got > 0.1+1e-9 {
		t.Errorf("requests after the pod went = %v, want 0.1", got)
	}
}

// TestExportReportsEachPoolsUsageAndLimits: NodePools and Provisioners alike report what their
// status counts and what their spec bounds, the nodepool label holding their name; a pool
// without a limit on a resource has no limit series for it, and a pool gone takes its series.
func TestExportReportsEachPoolsUsageAndLimits(t *testing.T) {
	nodePool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"},
		Spec:   v1.NodePoolSpec{Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100"), v1.LimitNodes: resource.MustParse("10")}},
		Status: v1.NodePoolStatus{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4500m")}, Nodes: ptr.To[int64](3)}}
	provisioner := &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:   v1alpha5.ProvisionerSpec{Limits: &v1alpha5.Limits{Resources: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		Status: v1alpha5.ProvisionerStatus{Resources: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}
	controller, c := exportedOnce(t, nodePool, provisioner)
	for _, c := range []struct {
		family, pool, resource string
		want                   float64
		exported               bool
	}{
		{"karpenter_nodepools_usage", "general", "cpu", 4.5, true},
		{"karpenter_nodepools_usage", "general", "nodes", 3, true},
		{"karpenter_nodepools_limit", "general", "cpu", 100, true},
		{"karpenter_nodepools_limit", "general", "nodes", 10, true},
		{"karpenter_nodepools_limit", "general", "memory", 0, false},
		{"karpenter_nodepools_usage", "default", "memory", 512 << 20, true},
		{"karpenter_nodepools_limit", "default", "memory", 1 << 30, true},
	} {
		got, ok := gather(t, c.family, map[string]string{"nodepool": c.pool, "resource_type": c.resource})
		if ok != c.exported || got != c.want {
			t.Errorf("%s{nodepool=%s, resource_type=%s} = %v (exported %t), want %v (exported %t)", c.family, c.pool, c.resource, got, ok, c.want, c.exported)
		}
	}
	if err := c.Delete(context.Background(), client.Object(nodePool)); err != nil {
		t.Fatal(err)
	}
	if err := controller.Export(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := gather(t, "karpenter_nodepools_usage", map[string]string{"nodepool": "general"}); ok {
		t.Error("the deleted NodePool's usage is still exported")
	}
}

// exportedOnce is a controller over a fake client holding objects, after one pass, and the client.
func exportedOnce(t *testing.T, objects ...client.Object) (*statemetrics.Controller, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objects...).Build()
	controller, err := statemetrics.New(statemetrics.Options{Client: c, Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Export(context.Background()); err != nil {
		t.Fatal(err)
	}
	return controller, c
}

// TestExportServesOnePoolOfAName: a NodePool and a Provisioner of one name are one pool, the
// Provisioner's value where both have one and the NodePool's where only it has one, as when
// each set its series in turn.
func TestExportServesOnePoolOfAName(t *testing.T) {
	nodePool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Status: v1.NodePoolStatus{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Nodes: ptr.To[int64](3)}}
	provisioner := &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Status: v1alpha5.ProvisionerStatus{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	exportedOnce(t, nodePool, provisioner)
	for resourceType, want := range map[string]float64{"cpu": 2, "nodes": 3} {
		if got, ok := gather(t, "karpenter_nodepools_usage", map[string]string{"nodepool": "shared", "resource_type": resourceType}); !ok || got != want {
			t.Errorf("karpenter_nodepools_usage{nodepool=shared, resource_type=%s} = %v (exported %t), want %v", resourceType, got, ok, want)
		}
	}
}

// TestExportServesOneSeriesOfAResourceType: two resources whose names the resource_type label
// spells alike are one series, the first name's: two would fail every scrape of /metrics.
func TestExportServesOneSeriesOfAResourceType(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alike"}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{"example.com/foo-bar": resource.MustParse("1"), "example.com/foo_bar": resource.MustParse("2")}}}
	exportedOnce(t, node)
	if got, ok := gather(t, "karpenter_nodes_allocatable", map[string]string{"node_name": "alike", "resource_type": "example.com/foo_bar"}); !ok || got != 1 {
		t.Errorf("karpenter_nodes_allocatable{resource_type=example.com/foo_bar} = %v (exported %t), want example.com/foo-bar's 1", got, ok)
	}
}

// TestExportLeavesOutASeriesThatCannotBeServed: a label value that is not UTF-8 (which the API
// server would refuse, a fake client does not) loses its node's series and says so, and every
// other series is still served: one such series in the registry would fail every scrape. (A
// fake client's JSON would mend the value; the cache's objects are not re-encoded.)
func TestExportLeavesOutASeriesThatCannotBeServed(t *testing.T) {
	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{corev1.LabelTopologyZone: "\xff"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	good := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "good"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	reader := &listReader{nodes: corev1.NodeList{Items: []corev1.Node{*bad, *good}}}
	controller, err := statemetrics.New(statemetrics.Options{Client: reader, Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Export(context.Background()); err == nil || !strings.Contains(err.Error(), "node bad") {
		t.Errorf("Export() = %v, want the bad node named", err)
	}
	if got, ok := gather(t, "karpenter_nodes_allocatable", map[string]string{"node_name": "good", "resource_type": "cpu"}); !ok || got != 2 {
		t.Errorf("the good node's allocatable cpu = %v (exported %t), want 2", got, ok)
	}
	if _, ok := gather(t, "karpenter_nodes_allocatable", map[string]string{"node_name": "bad"}); ok {
		t.Error("the bad node's series is served")
	}
}
