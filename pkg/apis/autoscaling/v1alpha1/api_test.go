package v1alpha1_test

import (
	"bytes"
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// One control plane serves every test in this package: startup dominates the runtime.
var env *environment.Environment

func TestAPI(t *testing.T) {
	env = environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	t.Run("examples apply and round-trip", testExamplesRoundTrip)
	t.Run("invalid objects are rejected naming the field", testInvalidObjectsRejected)
	t.Run("kubectl scale sets spec.replicas", testKubectlScale)
	t.Run("a node group's type and id are immutable", testNodeGroupIdentityImmutable)
	t.Run("defaults", testDefaults)
}

// testExamplesRoundTrip creates every manifest in v0.1's shape and reads it back unchanged.
func testExamplesRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, object := range manifests.DecodeFile(t, "testdata/v0.1-examples.yaml") {
		object.SetNamespace("default")
		want := typed(t, object)
		if err := env.Client.Create(ctx, object); err != nil {
			t.Fatalf("creating %s %s, %v", object.GetKind(), object.GetName(), err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(object.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(object), got); err != nil {
			t.Fatalf("reading %s %s back, %v", object.GetKind(), object.GetName(), err)
		}
		// Comparing the Go types' specs makes quantities compare by value, as users mean them.
		wantSpec := reflect.ValueOf(want).Elem().FieldByName("Spec").Interface()
		gotSpec := reflect.ValueOf(typed(t, got)).Elem().FieldByName("Spec").Interface()
		if !equality.Semantic.DeepEqual(wantSpec, gotSpec) {
			t.Errorf("%s %s did not round-trip:\nsent %+v\ngot  %+v", object.GetKind(), object.GetName(), wantSpec, gotSpec)
		}
	}
}

// typed converts an object to its Go type, failing on fields the type does not know.
func typed(t *testing.T, object *unstructured.Unstructured) runtime.Object {
	t.Helper()
	typed, err := env.Scheme.New(object.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(object.Object, typed, true); err != nil {
		t.Fatalf("decoding %s %s, %v", object.GetKind(), object.GetName(), err)
	}
	return typed
}

func testInvalidObjectsRejected(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, message string
	}{
		{"min above max", ha(`minReplicas: 5
  maxReplicas: 2`), "spec.maxReplicas: Invalid value: \"object\": maxReplicas must be greater than or equal to minReplicas, which is 1 when not set"},
		{"negative min", ha(`minReplicas: -1
  maxReplicas: 2`), "spec.minReplicas: Invalid value: -1: spec.minReplicas in body should be greater than or equal to 0"},
		{"missing max", ha(`minReplicas: 1`), "spec.maxReplicas: Required value"},
		{"unknown target type", haMetric(`type: Percentage
          value: 1`), "spec.metrics[0].prometheus.target.type: Unsupported value: \"Percentage\""},
		{"empty query", `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics: [{prometheus: {query: "", target: {type: Value, value: 1}}}]`, "spec.metrics[0].prometheus.query: Invalid value: \"\""},
		{"query longer than the maximum", `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics: [{prometheus: {query: "` + strings.Repeat("x", v1alpha1.MaxQueryLength+1) + `", target: {type: Value, value: 1}}}]`,
			"spec.metrics[0].prometheus.query: Too long: may not be more than 4096 bytes"},
		{"metric without a source", `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics: [{}]`, "spec.metrics[0]: Invalid value: \"object\": a metric must set prometheus"},
		{"target without a name", `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment}
  maxReplicas: 3`, "spec.scaleTargetRef.name: Required value"},
		{"policy period zero", haBehavior(`scaleUp: {policies: [{type: Count, value: 1, periodSeconds: 0}]}`), "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 0"},
		{"policy period above 1800", haBehavior(`scaleDown: {policies: [{type: Percent, value: 10, periodSeconds: 1801}]}`), "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801"},
		{"policy value zero", haBehavior(`scaleDown: {policies: [{type: Percent, value: 0, periodSeconds: 15}]}`), "spec.behavior.scaleDown.policies[0].value: Invalid value: 0"},
		{"unknown policy type", haBehavior(`scaleUp: {policies: [{type: Ratio, value: 1, periodSeconds: 15}]}`), "spec.behavior.scaleUp.policies[0].type: Unsupported value: \"Ratio\""},
		{"unknown select policy", haBehavior(`scaleUp: {selectPolicy: Average}`), "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Average\""},
		{"window above an hour", haBehavior(`scaleDown: {stabilizationWindowSeconds: 3601}`), "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601"},
		{"two producers at once", mp(`queue: {type: AWSSQSQueue, id: q}
  reservedCapacity: {nodeSelector: {group: a}}`), "spec: Invalid value: \"object\": exactly one of pendingCapacity, reservedCapacity, queue or scheduleSpec must be set"},
		{"no producer", mp(`{}`), "exactly one of pendingCapacity, reservedCapacity, queue or scheduleSpec must be set"},
		{"unknown queue type", mp(`queue: {type: RabbitMQ, id: q}`), "spec.queue.type: Unsupported value: \"RabbitMQ\""},
		{"reserved capacity over two labels", mp(`reservedCapacity: {nodeSelector: {a: b, c: d}}`), "spec.reservedCapacity.nodeSelector: Too many: 2: must have at most 1 item"},
		{"pending capacity without a selector", mp(`pendingCapacity: {nodeSelector: {}}`), "spec.pendingCapacity.nodeSelector: Invalid value: 0: spec.pendingCapacity.nodeSelector in body should have at least 1 properties"},
		{"utilization with a percent sign", ha(`maxReplicas: 2
  metrics:
  - prometheus: {query: "up", target: {type: Utilization, value: "70%"}}`), "write 70, a percentage without the % sign"},
		{"a target value that is no quantity", ha(`maxReplicas: 2
  metrics:
  - prometheus: {query: "up", target: {type: Value, value: "ten"}}`), "spec.metrics[0].prometheus.target.value: Invalid value: \"\": \"ten\" is not a quantity, such as 70, 0.5, 500m or 2Gi"},
		{"a target value written as an unquoted fraction", ha(`maxReplicas: 2
  metrics:
  - prometheus: {query: "up", target: {type: Value, value: 0.5}}`), "spec.metrics[0].prometheus.target.value: Invalid value: \"number\": spec.metrics[0].prometheus.target.value in body must be of type integer,string"},
		{"negative default replicas", mp(`scheduleSpec: {defaultReplicas: -1}`), "spec.scheduleSpec.defaultReplicas: Invalid value: -1"},
		{"behavior without start", mp(`scheduleSpec: {defaultReplicas: 1, behaviors: [{replicas: 2, end: {hours: "9"}}]}`), "spec.scheduleSpec.behaviors[0].start: Required value"},
		{"negative node group replicas", sng(`replicas: -3
  type: AWSEC2AutoScalingGroup
  id: asg`), "spec.replicas: Invalid value: -3: should be a non-negative integer"},
		{"unknown node group type", sng(`type: GCPManagedInstanceGroup
  id: mig`), "spec.type: Unsupported value: \"GCPManagedInstanceGroup\""},
		{"node group without id", sng(`type: AWSEKSNodeGroup`), "spec.id: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			object := manifests.Decode(t, tc.manifest)
			object.SetNamespace("default")
			err := env.Client.Create(context.Background(), object)
			if err == nil {
				t.Fatalf("the apiserver admitted %s", tc.manifest)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("rejected with\n  %v\nwant a message containing\n  %s", err, tc.message)
			}
			// Each problem is reported once.
			if field, _, named := strings.Cut(tc.message, ": "); named && strings.HasPrefix(field, "spec.") && strings.Count(err.Error(), field+": ") != 1 {
				t.Errorf("rejected with\n  %v\nwant %s reported once", err, field)
			}
			// A target written "70%" gets the % sign's message alone, not a quantity pattern's
			// or rule's beside it.
			if strings.Contains(tc.message, "% sign") && strings.Count(err.Error(), "Invalid value") != 1 {
				t.Errorf("rejected with\n  %v\nwant the %% sign's message alone", err)
			}
		})
	}
}

// testKubectlScale scales a ScalableNodeGroup through the scale subresource, as users and
// HorizontalPodAutoscalers do.
func testKubectlScale(t *testing.T) {
	ctx := context.Background()
	group := &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "scaled", Namespace: "default"},
		Spec:       v1alpha1.ScalableNodeGroupSpec{Type: v1alpha1.AWSEC2AutoScalingGroup, ID: "scaled-asg", Replicas: ptr.To[int32](1)},
	}
	if err := env.Client.Create(ctx, group); err != nil {
		t.Fatal(err)
	}
	kubectl := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "--namespace", "default", "scale", "scalablenodegroup/scaled", "--replicas=3")
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl scale, %v: %s", err, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(group), group); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(group.Spec.Replicas, -1); got != 3 {
		t.Errorf("spec.replicas = %d after kubectl scale --replicas=3", got)
	}
	scale, err := kubernetes.NewForConfigOrDie(env.Config).RESTClient().Get().
		AbsPath("/apis/autoscaling.karpenter.sh/v1alpha1/namespaces/default/scalablenodegroups/scaled/scale").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the scale subresource, %v", err)
	}
	if !bytes.Contains(scale, []byte(`"replicas":3`)) {
		t.Errorf("scale subresource does not report 3 replicas: %s", scale)
	}
}

func testDefaults(t *testing.T) {
	ctx := context.Background()
	autoscaler := &v1alpha1.HorizontalAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: "default"},
		Spec: v1alpha1.HorizontalAutoscalerSpec{
			ScaleTargetRef: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    4,
		},
	}
	if err := env.Client.Create(ctx, autoscaler); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(autoscaler.Spec.MinReplicas, -1); got != 1 {
		t.Errorf("minReplicas defaulted to %d, want 1 as for the HorizontalPodAutoscaler", got)
	}
}

func ha(spec string) string {
	return `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  ` + spec
}

func haMetric(target string) string {
	return ha(`maxReplicas: 3
  metrics:
    - prometheus:
        query: up
        target:
          ` + target)
}

func haBehavior(behavior string) string {
	return ha(`maxReplicas: 3
  behavior:
    ` + behavior)
}

func mp(spec string) string {
	return `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: MetricsProducer
metadata: {name: bad}
spec:
  ` + spec
}

func sng(spec string) string {
	return `apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: ScalableNodeGroup
metadata: {name: bad}
spec:
  ` + spec
}

// testNodeGroupIdentityImmutable: an object granted one node group must not be repointed at
// another, so type and id are fixed at creation; replicas stay writable.
func testNodeGroupIdentityImmutable(t *testing.T) {
	ctx := context.Background()
	group := &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "immutable", Namespace: "default"},
		Spec:       v1alpha1.ScalableNodeGroupSpec{Type: v1alpha1.AWSEC2AutoScalingGroup, ID: "workers"},
	}
	if err := env.Client.Create(ctx, group); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		change  func(*v1alpha1.ScalableNodeGroupSpec)
		message string
	}{
		{"id", func(s *v1alpha1.ScalableNodeGroupSpec) { s.ID = "other" }, "spec.id: Invalid value: \"string\": id is immutable"},
		{"type", func(s *v1alpha1.ScalableNodeGroupSpec) { s.Type = v1alpha1.AWSEKSNodeGroup; s.ID = "cluster/workers" }, "spec.type: Invalid value: \"string\": type is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := group.DeepCopy()
			tc.change(&changed.Spec)
			err := env.Client.Update(ctx, changed)
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("changing %s: %v, want a rejection containing %q", tc.name, err, tc.message)
			}
		})
	}
	changed := group.DeepCopy()
	changed.Spec.Replicas = ptr.To[int32](2)
	if err := env.Client.Update(ctx, changed); err != nil {
		t.Errorf("changing replicas: %v", err)
	}
}
