package horizontalautoscaler_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/crds"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/gauges"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// period is the controller's evaluation period in these tests; windows and policies are a few
// periods long so that the suite stays short while every rule still shows.
const period = time.Second

// metricSource is the HTTP endpoint Prometheus scrapes: the test sets the values.
type metricSource struct {
	mu     sync.Mutex
	values map[string]float64 // by the value of the "case" label
}

func (m *metricSource) set(name string, value float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values[name] = value
}

func (m *metricSource) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# TYPE test_load gauge")
	for name, value := range m.values {
		fmt.Fprintf(w, "test_load{case=%q} %g\n", name, value)
	}
}

func query(name string) string { return fmt.Sprintf(`test_load{case=%q}`, name) }

// widgetCRD is a kind defined only by this test; its scale subresource is all the controller
// needs.
var widgetCRD = crds.Scalable(schema.GroupResource{Group: "test.karpenter.sh", Resource: "widgets"}, "Widget")

type suite struct {
	env     *environment.Environment
	metrics *metricSource
}

func TestHorizontalAutoscaler(t *testing.T) {
	metrics := &metricSource{values: map[string]float64{}}
	server := httptest.NewServer(metrics)
	defer server.Close()
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme},
		CRDs:        []*apiextensionsv1.CustomResourceDefinition{widgetCRD},
		Prometheus: &environment.PrometheusOptions{ScrapeConfigs: []environment.ScrapeConfig{{
			JobName: "test", Targets: []string{server.Listener.Addr().(*net.TCPAddr).String()},
		}}},
	})
	s := &suite{env: env, metrics: metrics}

	shared := []string{"deployment", "sng", "unset", "widget", "errors", "disabled", "outage"}
	for _, ns := range append(shared, "restart", "forbidden") {
		s.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	stop := s.startController(t, shared...)
	defer stop()

	t.Run("group", func(t *testing.T) {
		t.Run("DeploymentFollowsTheMetricWithinWindowsAndPolicies", s.testDeployment)
		t.Run("ScalableNodeGroupSpecReplicas", s.testScalableNodeGroup)
		t.Run("UnsetSpecReplicasAreUnknownNotZero", s.testUnsetReplicas)
		t.Run("CustomResourceWithScale", s.testWidget)
		t.Run("TargetErrors", s.testTargetErrors)
		t.Run("ZeroReplicasDisableScaling", s.testDisabledAtZero)
		t.Run("RestartInsideScaleDownWindow", s.testRestart)
		t.Run("ForbiddenTarget", s.testForbidden)
	})
	// Last, because it stops the shared Prometheus.
	t.Run("PrometheusOutageNeverScalesDown", s.testOutage)
}

// startController runs the controller in its own manager, watching only namespaces.
func (s *suite) startController(t *testing.T, namespaces ...string) (stop func()) {
	t.Helper()
	return s.startControllerAs(t, s.env.Config, namespaces...)
}

// startControllerAs runs the controller with the identity of config.
func (s *suite) startControllerAs(t *testing.T, restConfig *rest.Config, namespaces ...string) (stop func()) {
	t.Helper()
	return operatortest.Start(t, s.env, operatortest.Options{
		Config:     restConfig,
		Namespaces: namespaces,
		Controllers: controllers.Options{
			Enabled:                           []string{horizontalautoscaler.Name},
			PrometheusTimeout:                 2 * time.Second,
			HorizontalAutoscalerPeriod:        period,
			HorizontalAutoscalerTolerance:     autoscaler.DefaultTolerance,
			HorizontalAutoscalerMaxRetryDelay: 2 * time.Second,
		},
	})
}

func (s *suite) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := s.env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s, %v", obj, obj.GetName(), err)
	}
}

func (s *suite) getHA(t *testing.T, namespace, name string) *v1alpha1.HorizontalAutoscaler {
	t.Helper()
	ha := &v1alpha1.HorizontalAutoscaler{}
	if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, ha); err != nil {
		t.Fatal(err)
	}
	return ha
}

func condition(ha *v1alpha1.HorizontalAutoscaler, t string) (status, reason, message string) {
	for _, c := range ha.Status.Conditions {
		if string(c.Type) == t {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

func deployment(namespace, name string, replicas int32) *appsv1.Deployment {
	return builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: namespace, Replicas: replicas})
}

func horizontalAutoscaler(namespace, name string, target v1alpha1.CrossVersionObjectReference, minReplicas, maxReplicas int32,
	targetType v1alpha1.MetricTargetType, targetValue string, behavior v1alpha1.Behavior) *v1alpha1.HorizontalAutoscaler {
	return &v1alpha1.HorizontalAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.HorizontalAutoscalerSpec{
			ScaleTargetRef: target,
			MinReplicas:    ptr.To(minReplicas),
			MaxReplicas:    maxReplicas,
			Metrics: []v1alpha1.Metric{{Prometheus: &v1alpha1.PrometheusMetricSource{
				Query:  query(namespace),
				Target: v1alpha1.MetricTarget{Type: targetType, Value: resource.MustParse(targetValue)},
			}}},
			Behavior: behavior,
		},
	}
}

func deploymentRef(name string) v1alpha1.CrossVersionObjectReference {
	return v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

func scalingRules(window int32, policies ...v1alpha1.ScalingPolicy) *v1alpha1.ScalingRules {
	return &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To(window), Policies: policies}
}

func (s *suite) deploymentReplicas(t *testing.T, namespace, name string) int32 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(d.Spec.Replicas, 0)
}

// trajectory polls a target's replicas and records each distinct value in order.
type trajectory struct {
	mu     sync.Mutex
	values []int32
	stop   chan struct{}
	done   chan struct{}
}

func (s *suite) follow(t *testing.T, namespace, name string) *trajectory {
	tr := &trajectory{stop: make(chan struct{}), done: make(chan struct{})}
	read := func() {
		d := &appsv1.Deployment{}
		if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d); err == nil {
			tr.mu.Lock()
			if r := ptr.Deref(d.Spec.Replicas, 0); len(tr.values) == 0 || tr.values[len(tr.values)-1] != r {
				tr.values = append(tr.values, r)
			}
			tr.mu.Unlock()
		}
	}
	go func() {
		defer close(tr.done)
		for {
			read()
			select {
			case <-tr.stop:
				// One last look, so that the value the test waited for is in.
				read()
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return tr
}

func (tr *trajectory) finish() []int32 {
	close(tr.stop)
	<-tr.done
	return tr.values
}

// latestRecommendationAtLeast is the latest time, at least latest, of a recommendation of
// at least replicas kept in status.
func latestRecommendationAtLeast(ha *v1alpha1.HorizontalAutoscaler, replicas int32, latest time.Time) time.Time {
	for _, r := range ha.Status.Recommendations {
		if r.Replicas >= replicas && r.Time.After(latest) {
			latest = r.Time.Time
		}
	}
	return latest
}

func (s *suite) testDeployment(t *testing.T) {
	t.Parallel()
	const ns, name = "deployment", "web"
	s.create(t, deployment(ns, name, 1))
	s.metrics.set(ns, 6)
	// Up: Count 2 per 4s, no window. Down: a 6s window, then all at once.
	s.create(t, horizontalAutoscaler(ns, name, deploymentRef(name), 1, 10, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{
		ScaleUp:   scalingRules(0, v1alpha1.ScalingPolicy{Type: v1alpha1.CountScalingPolicy, Value: 2, PeriodSeconds: 4}),
		ScaleDown: scalingRules(6, v1alpha1.ScalingPolicy{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 1}),
	}))
	up := s.follow(t, ns, name)
	sawLimited := false
	eventually.Holds(t, "the deployment scales up to 6", func() (bool, string, error) {
		ha := s.getHA(t, ns, name)
		if _, reason, _ := condition(ha, "AbleToScale"); reason == "ScaleUpLimited" {
			sawLimited = true
		}
		r := s.deploymentReplicas(t, ns, name)
		return r == 6, fmt.Sprintf("replicas %d, want 6; status %+v", r, ha.Status.Conditions), nil
	}, eventually.Timeout(40*time.Second))
	if got := up.finish(); fmt.Sprint(got) != fmt.Sprint([]int32{1, 3, 5, 6}) {
		t.Errorf("scale-up went through %v, want [1 3 5 6]: 2 replicas per 4s", got)
	}
	if !sawLimited {
		t.Error("AbleToScale never said ScaleUpLimited during a rate-limited scale-up")
	}
	// The status is written after the scale, so it may trail it briefly.
	var ha *v1alpha1.HorizontalAutoscaler
	eventually.Holds(t, "the status reports 6 desired replicas and a metric of 6", func() (bool, string, error) {
		ha = s.getHA(t, ns, name)
		metrics := ha.Status.CurrentMetrics
		return ptr.Deref(ha.Status.DesiredReplicas, -1) == 6 && len(metrics) > 0 && metrics[0].Prometheus != nil &&
				metrics[0].Prometheus.Current.Value != nil && metrics[0].Prometheus.Current.Value.Cmp(resource.MustParse("6")) == 0,
			fmt.Sprintf("desired %v, currentMetrics %+v, want 6 and 6", ptr.Deref(ha.Status.DesiredReplicas, -1), metrics), nil
	}, eventually.Timeout(10*time.Second))

	// Down: the window keeps 6 until 6s after the last recommendation of 6.
	var lastSix time.Time
	lastSix = latestRecommendationAtLeast(ha, 6, lastSix)
	s.metrics.set(ns, 2)
	down := s.follow(t, ns, name)
	sawStabilized := ""
	eventually.Holds(t, "the deployment scales down to 2", func() (bool, string, error) {
		ha := s.getHA(t, ns, name)
		lastSix = latestRecommendationAtLeast(ha, 6, lastSix)
		if _, reason, message := condition(ha, "AbleToScale"); reason == "ScaleDownStabilized" {
			sawStabilized = message
		}
		r := s.deploymentReplicas(t, ns, name)
		// The status is written after the scale: wait for both.
		return r == 2 && ptr.Deref(ha.Status.DesiredReplicas, -1) == 2, fmt.Sprintf("replicas %d, desired %d, want 2", r, ptr.Deref(ha.Status.DesiredReplicas, -1)), nil
	}, eventually.Timeout(40*time.Second))
	if got := down.finish(); fmt.Sprint(got) != fmt.Sprint([]int32{6, 2}) {
		t.Errorf("scale-down went through %v, want [6 2]", got)
	}
	if !strings.Contains(sawStabilized, "6s scale-down stabilization window holds 6 replicas") || !strings.Contains(sawStabilized, "until") {
		t.Errorf("AbleToScale while held said %q, want the window, the held replicas and until when", sawStabilized)
	}
	ha = s.getHA(t, ns, name)
	// Status keeps seconds: lastScaleTime is truncated, recommendations are rounded up.
	if scaled := ha.Status.LastScaleTime.Inner.Time.Add(time.Second); scaled.Before(lastSix.Add(6 * time.Second)) {
		t.Errorf("scaled down at %s, before the window of the recommendation of 6 at %s ended", scaled, lastSix)
	}
	if got, ok := gauges.Value(t, "karpenter_horizontalautoscaler_desired_replicas", types.NamespacedName{Namespace: ns, Name: name}); !ok || got != 2 {
		t.Errorf("desired_replicas gauge = %v (exported: %t), want 2", got, ok)
	}
}

func (s *suite) testScalableNodeGroup(t *testing.T) {
	t.Parallel()
	const ns, name = "sng", "workers"
	s.create(t, &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		// The scale subresource needs spec.replicas to exist; zero exercises scale from zero.
		Spec: v1alpha1.ScalableNodeGroupSpec{Replicas: ptr.To[int32](0), Type: v1alpha1.AWSEC2AutoScalingGroup, ID: "workers-asg"},
	})
	s.metrics.set(ns, 3)
	ref := v1alpha1.CrossVersionObjectReference{APIVersion: "autoscaling.karpenter.sh/v1alpha1", Kind: "ScalableNodeGroup", Name: name}
	s.create(t, horizontalAutoscaler(ns, name, ref, 0, 5, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{}))
	eventually.Holds(t, "the autoscaler scales the ScalableNodeGroup to 3", func() (bool, string, error) {
		sng := &v1alpha1.ScalableNodeGroup{}
		if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, sng); err != nil {
			t.Fatal(err)
		}
		return ptr.Deref(sng.Spec.Replicas, -1) == 3, fmt.Sprintf("spec.replicas %v, want 3; autoscaler %+v", sng.Spec.Replicas, s.getHA(t, ns, name).Status), nil
	}, eventually.Timeout(30*time.Second))
	// Deleting the autoscaler deletes its series.
	if err := s.env.Client.Delete(context.Background(), s.getHA(t, ns, name)); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the deleted autoscaler's series are gone", func() (bool, string, error) {
		n := gauges.Count(t, "karpenter_horizontalautoscaler_", types.NamespacedName{Namespace: ns, Name: name})
		return n == 0, fmt.Sprintf("%d series left for the deleted autoscaler", n), nil
	}, eventually.Timeout(30*time.Second))
}

// testUnsetReplicas: a ScalableNodeGroup created without spec.replicas over a group of 20
// nodes. Until its controller adopts the 20, the autoscaler refuses it instead of reading a
// size of zero; once adopted, it scales from 20 to what the metric asks, never below.
func (s *suite) testUnsetReplicas(t *testing.T) {
	t.Parallel()
	const ns, name = "unset", "running"
	s.create(t, &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ScalableNodeGroupSpec{Type: v1alpha1.AWSEC2AutoScalingGroup, ID: name},
	})
	s.metrics.set(ns, 24)
	ref := v1alpha1.CrossVersionObjectReference{APIVersion: "autoscaling.karpenter.sh/v1alpha1", Kind: "ScalableNodeGroup", Name: name}
	// minReplicas 0: read as zero, the group would "scale from zero" to a handful of nodes.
	s.create(t, horizontalAutoscaler(ns, name, ref, 0, 30, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{}))
	eventually.Holds(t, "AbleToScale reports "+horizontalautoscaler.ReasonTargetReplicasUnset, func() (bool, string, error) {
		status, reason, message := condition(s.getHA(t, ns, name), "AbleToScale")
		return status == "False" && reason == horizontalautoscaler.ReasonTargetReplicasUnset && strings.Contains(message, "size is unknown"),
			fmt.Sprintf("AbleToScale %s %s %q", status, reason, message), nil
	}, eventually.Timeout(20*time.Second))
	s.expectEvent(t, ns, name, corev1.EventTypeWarning, horizontalautoscaler.ReasonTargetReplicasUnset, "has no spec replicas")
	sng := &v1alpha1.ScalableNodeGroup{}
	if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, sng); err != nil {
		t.Fatal(err)
	}
	if sng.Spec.Replicas != nil {
		t.Fatalf("spec.replicas %d written while the size was unknown", *sng.Spec.Replicas)
	}
	// What the autoscaler relies on: the API server refuses to read this /scale rather than
	// answer zero replicas.
	scale := &autoscalingv1.Scale{}
	if err := s.env.Client.SubResource("scale").Get(context.Background(), sng, scale); !apierrors.IsInternalError(err) {
		t.Fatalf("reading the scale of a group without spec.replicas: %+v, %v; want the API server's refusal", scale.Spec, err)
	}

	// The node group controller adopts the cloud's 20.
	group := fake.NewNodeGroup(20, 0, 30).GrantTo(ns)
	cloud := fake.NewFactory()
	cloud.AddNodeGroup(string(v1alpha1.AWSEC2AutoScalingGroup), name, group)
	stop := operatortest.Start(t, s.env, operatortest.Options{Namespaces: []string{ns}, Controllers: controllers.Options{
		Enabled: []string{scalablenodegroup.Name}, CloudProvider: cloud, ResyncPeriod: time.Second,
	}})
	defer stop()
	s.expectEventFor(t, ns, "ScalableNodeGroup", name, corev1.EventTypeNormal, scalablenodegroup.ReasonAdopted, "Adopted spec.replicas 20")
	eventually.Holds(t, "the autoscaler scales the adopted group from 20 to 24", func() (bool, string, error) {
		calls := group.SetCalls()
		return fmt.Sprint(calls) == "[24]", fmt.Sprintf("node group resized to %v, want [24]", calls), nil
	}, eventually.Timeout(30*time.Second))
	if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, sng); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(sng.Spec.Replicas, -1); got != 24 {
		t.Errorf("spec.replicas %d, want 24", got)
	}
}

func (s *suite) testWidget(t *testing.T) {
	t.Parallel()
	const ns, name = "widget", "gadget"
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.karpenter.sh", Version: "v1", Kind: "Widget"})
	widget.SetNamespace(ns)
	widget.SetName(name)
	_ = unstructured.SetNestedField(widget.Object, int64(1), "spec", "replicas")
	s.create(t, widget)
	_ = unstructured.SetNestedField(widget.Object, int64(1), "status", "replicas")
	if err := s.env.Client.Status().Update(context.Background(), widget); err != nil {
		t.Fatal(err)
	}
	// Value 30 against 10 with 1 replica running: 3 replicas.
	s.metrics.set(ns, 30)
	ref := v1alpha1.CrossVersionObjectReference{APIVersion: "test.karpenter.sh/v1", Kind: "Widget", Name: name}
	s.create(t, horizontalAutoscaler(ns, name, ref, 1, 10, v1alpha1.ValueMetricType, "10", v1alpha1.Behavior{}))
	eventually.Holds(t, "the target scales to 3", func() (bool, string, error) {
		if err := s.env.Client.Get(context.Background(), client.ObjectKeyFromObject(widget), widget); err != nil {
			t.Fatal(err)
		}
		replicas, _, _ := unstructured.NestedInt64(widget.Object, "spec", "replicas")
		return replicas == 3, fmt.Sprintf("spec.replicas %d, want 3", replicas), nil
	}, eventually.Timeout(30*time.Second))
	// The status is written after the scale, so it may trail it briefly.
	eventually.Holds(t, "the status reports the scale to 3", func() (bool, string, error) {
		ha := s.getHA(t, ns, name)
		current, desired := ptr.Deref(ha.Status.CurrentReplicas, -1), ptr.Deref(ha.Status.DesiredReplicas, -1)
		return current == 1 && desired == 3 && ha.Status.LastScaleTime != nil,
			fmt.Sprintf("status = current %d desired %d lastScaleTime %v, want 1, 3 and a time", current, desired, ha.Status.LastScaleTime), nil
	}, eventually.Timeout(10*time.Second))
	s.expectEvent(t, ns, name, corev1.EventTypeNormal, "SuccessfulRescale", "from 1 to 3")
}

func (s *suite) testTargetErrors(t *testing.T) {
	t.Parallel()
	const ns = "errors"
	s.metrics.set(ns, 3)
	for _, tc := range []struct {
		name   string
		ref    v1alpha1.CrossVersionObjectReference
		reason string
	}{
		{name: "missing", ref: deploymentRef("missing"), reason: "ScaleTargetNotFound"},
		{name: "configmap", ref: v1alpha1.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}, reason: "NoScaleSubresource"},
		{name: "unknown-kind", ref: v1alpha1.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Nothing", Name: "x"}, reason: "UnknownScaleTargetKind"},
	} {
		s.create(t, horizontalAutoscaler(ns, tc.name, tc.ref, 1, 5, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{}))
		eventually.Holds(t, "AbleToScale reports "+tc.reason, func() (bool, string, error) {
			ha := s.getHA(t, ns, tc.name)
			status, reason, message := condition(ha, "AbleToScale")
			ready, _, _ := condition(ha, "Ready")
			active, activeReason, _ := condition(ha, "Active")
			return status == "False" && reason == tc.reason && ready == "False" && active == "Unknown" && activeReason == "TargetUnavailable",
				fmt.Sprintf("%s: AbleToScale %s %s %q, Ready %s, Active %s %s; want False %s, False, Unknown TargetUnavailable", tc.name, status, reason, message, ready, active, activeReason, tc.reason), nil
		}, eventually.Timeout(20*time.Second))
		s.expectEvent(t, ns, tc.name, corev1.EventTypeWarning, tc.reason, "")
	}
	// The missing Deployment appears: the retry picks it up.
	s.create(t, deployment(ns, "missing", 1))
	eventually.Holds(t, "the deployment scales to 3", func() (bool, string, error) {
		r := s.deploymentReplicas(t, ns, "missing")
		return r == 3, fmt.Sprintf("replicas %d, want 3", r), nil
	}, eventually.Timeout(20*time.Second))
}

// testDisabledAtZero: as with the HorizontalPodAutoscaler, a target someone scaled to zero stays
// there while minReplicas is above zero, and scales from zero once minReplicas is 0.
func (s *suite) testDisabledAtZero(t *testing.T) {
	t.Parallel()
	const ns, name = "disabled", "idle"
	s.metrics.set(ns, 30)
	s.create(t, deployment(ns, name, 0))
	ha := horizontalAutoscaler(ns, name, deploymentRef(name), 1, 10, v1alpha1.ValueMetricType, "10", v1alpha1.Behavior{})
	s.create(t, ha)
	eventually.Holds(t, "Active reports ScalingDisabled", func() (bool, string, error) {
		status, reason, message := condition(s.getHA(t, ns, name), "Active")
		return status == "False" && reason == "ScalingDisabled", fmt.Sprintf("Active %s %s %q", status, reason, message), nil
	}, eventually.Timeout(20*time.Second))
	s.expectEvent(t, ns, name, corev1.EventTypeWarning, "ScalingDisabled", "replica count of the target is zero")
	if r := s.deploymentReplicas(t, ns, name); r != 0 {
		t.Fatalf("replicas %d, want 0 while scaling is disabled", r)
	}
	// Zero is a known size, so the status (and kubectl get's columns) say 0, not nothing.
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("HorizontalAutoscaler"))
	if err := s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, raw); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"currentReplicas", "desiredReplicas"} {
		if value, found, err := unstructured.NestedInt64(raw.Object, "status", field); err != nil || !found || value != 0 {
			t.Errorf("status.%s = %d (found %t, %v), want 0", field, value, found, err)
		}
	}
	// minReplicas 0 opts into scaling from zero: ceil(30 / 10) = 3.
	patch := client.MergeFrom(ha.DeepCopy())
	ha.Spec.MinReplicas = ptr.To[int32](0)
	if err := s.env.Client.Patch(context.Background(), ha, patch); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the deployment scales from zero to 3", func() (bool, string, error) {
		r := s.deploymentReplicas(t, ns, name)
		return r == 3, fmt.Sprintf("replicas %d, want 3", r), nil
	}, eventually.Timeout(30*time.Second))
}

func (s *suite) testRestart(t *testing.T) {
	t.Parallel()
	const ns, name, window = "restart", "api", 15
	stop := s.startController(t, ns)
	s.create(t, deployment(ns, name, 1))
	s.metrics.set(ns, 5)
	s.create(t, horizontalAutoscaler(ns, name, deploymentRef(name), 1, 10, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{
		ScaleDown: scalingRules(window, v1alpha1.ScalingPolicy{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 1}),
	}))
	eventually.Holds(t, "the deployment scales to 5", func() (bool, string, error) {
		r := s.deploymentReplicas(t, ns, name)
		return r == 5, fmt.Sprintf("replicas %d, want 5", r), nil
	}, eventually.Timeout(30*time.Second))
	s.metrics.set(ns, 1)
	var lastFive time.Time
	eventually.Holds(t, "AbleToScale reports ScaleDownStabilized", func() (bool, string, error) {
		ha := s.getHA(t, ns, name)
		lastFive = latestRecommendationAtLeast(ha, 5, lastFive)
		_, reason, _ := condition(ha, "AbleToScale")
		return reason == "ScaleDownStabilized", "AbleToScale reason " + reason + ", want ScaleDownStabilized", nil
	}, eventually.Timeout(30*time.Second))
	// A new controller, with nothing in memory, inside the window.
	stop()
	restart := s.startController(t, ns)
	defer restart()
	eventually.Holds(t, "the deployment scales down to 1", func() (bool, string, error) {
		r := s.deploymentReplicas(t, ns, name)
		desired := ptr.Deref(s.getHA(t, ns, name).Status.DesiredReplicas, -1)
		return r == 1 && desired == 1, fmt.Sprintf("replicas %d, desired %d, want 1", r, desired), nil
	}, eventually.Timeout(40*time.Second))
	ha := s.getHA(t, ns, name)
	if scaled := ha.Status.LastScaleTime.Inner.Time.Add(time.Second); scaled.Before(lastFive.Add(window * time.Second)) {
		t.Errorf("after a restart, scaled down at %s, before the window of the recommendation of 5 at %s ended", scaled, lastFive)
	}
}

func (s *suite) testOutage(t *testing.T) {
	const ns, name = "outage", "worker"
	s.create(t, deployment(ns, name, 1))
	s.metrics.set(ns, 4)
	s.create(t, horizontalAutoscaler(ns, name, deploymentRef(name), 1, 10, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{
		ScaleDown: scalingRules(0, v1alpha1.ScalingPolicy{Type: v1alpha1.PercentScalingPolicy, Value: 100, PeriodSeconds: 1}),
	}))
	eventually.Holds(t, "the deployment scales to 4", func() (bool, string, error) {
		r := s.deploymentReplicas(t, ns, name)
		return r == 4, fmt.Sprintf("replicas %d, want 4", r), nil
	}, eventually.Timeout(30*time.Second))
	if err := s.env.Prometheus.Stop(); err != nil {
		t.Fatal(err)
	}
	s.metrics.set(ns, 0)
	eventually.Holds(t, "Active reports MetricsUnavailable", func() (bool, string, error) {
		ha := s.getHA(t, ns, name)
		status, reason, message := condition(ha, "Active")
		return status == "False" && reason == "MetricsUnavailable" && strings.Contains(message, "connection refused"),
			fmt.Sprintf("Active %s %s %q", status, reason, message), nil
	}, eventually.Timeout(20*time.Second))
	s.expectEvent(t, ns, name, corev1.EventTypeWarning, "MetricsUnavailable", "replicas stay at 4")
	// A few more periods without metrics: still 4.
	for range 3 * int(period/(200*time.Millisecond)) {
		if r := s.deploymentReplicas(t, ns, name); r != 4 {
			t.Fatalf("replicas %d during the outage, want 4", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *suite) expectEvent(t *testing.T, namespace, name, eventType, reason, messageContains string) {
	t.Helper()
	s.expectEventFor(t, namespace, "HorizontalAutoscaler", name, eventType, reason, messageContains)
}

func (s *suite) expectEventFor(t *testing.T, namespace, kind, name, eventType, reason, messageContains string) {
	t.Helper()
	// Events are recorded asynchronously.
	eventually.Holds(t, fmt.Sprintf("a %s %s event", eventType, reason), func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := s.env.Client.List(context.Background(), events, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == kind {
				if e.Type == eventType && e.Reason == reason && strings.Contains(e.Message, messageContains) {
					return true, "", nil
				}
				seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
			}
		}
		sort.Strings(seen)
		return false, fmt.Sprintf("no %s event %s containing %q among %q", eventType, reason, messageContains, seen), nil
	}, eventually.Timeout(30*time.Second))
}

// testForbidden runs a controller whose identity may read the target's scale but not write
// it, as a cluster whose RBAC lacks Karpenter's role would: the HorizontalAutoscaler says so.
func (s *suite) testForbidden(t *testing.T) {
	t.Parallel()
	const ns, user = "forbidden", "karpenter-without-scale-update"
	s.create(t, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"horizontalautoscalers"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"horizontalautoscalers/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// The operator caches pods and nodes for its field indexes, whichever controllers run.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		},
	})
	// Nodes and NodeClaims are cluster-scoped: a Role cannot grant them. Without them the cache
	// (which indexes both) never syncs and the controller never starts.
	s.create(t, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{v1.SchemeGroupVersion.Group}, Resources: []string{"nodeclaims"}, Verbs: []string{"get", "list", "watch"}},
		},
	})
	s.create(t, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})
	s.create(t, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})
	limited := rest.CopyConfig(s.env.Config)
	limited.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	stop := s.startControllerAs(t, limited, ns)
	defer stop()

	s.metrics.set(ns, 4)
	s.create(t, deployment(ns, "web", 1))
	s.create(t, horizontalAutoscaler(ns, "web", deploymentRef("web"), 1, 5, v1alpha1.AverageValueMetricType, "1", v1alpha1.Behavior{}))
	eventually.Holds(t, "AbleToScale reports Forbidden", func() (bool, string, error) {
		ha := s.getHA(t, ns, "web")
		status, reason, message := condition(ha, "AbleToScale")
		return status == "False" && reason == "Forbidden" && strings.Contains(message, "forbidden"),
			fmt.Sprintf("AbleToScale %s %s %q; want False Forbidden", status, reason, message), nil
	}, eventually.Timeout(30*time.Second))
	s.expectEvent(t, ns, "web", corev1.EventTypeWarning, "Forbidden", "deployments.apps \"web\" is forbidden")
	if r := s.deploymentReplicas(t, ns, "web"); r != 1 {
		t.Errorf("replicas %d, want the unchanged 1", r)
	}
}
