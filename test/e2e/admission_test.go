package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/test/manifests"
	"karpenter.sh/karpenter/test/sandbox"
)

// deniedBy is how the apiserver quotes the sandbox's validation webhook, the release's.
const deniedBy = `admission webhook "validation.webhook.karpenter.sh" denied the request: validation failed: `

// TestBadInputIsRefusedAtAdmission applies, as a user would, objects that pass the CRD schemas
// but that docs/concepts.md and docs/webhook.md say are refused at admission: the sandbox runs
// the release's webhook, so each is refused with the webhook's message naming the field.
func TestBadInputIsRefusedAtAdmission(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, manifest, want string
	}{{
		// docs/getting-started.md, step 4.
		name: "bad PromQL",
		manifest: `
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: broken}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
  - prometheus: {query: "sum(rate(x[5m]", target: {type: Value, value: "1"}}
`,
		want: "invalid PromQL: 1:15: parse error: unclosed left parenthesis: spec.metrics[0].prometheus.query",
	}, {
		name: "bad time zone",
		manifest: `
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: MetricsProducer
metadata: {name: bad-timezone}
spec:
  scheduleSpec:
    timezone: America/Los_Angels
    defaultReplicas: 0
    behaviors:
    - replicas: 3
      start: {weekdays: Mon-Fri, hours: "9"}
      end: {weekdays: Mon-Fri, hours: "17"}
`,
		want: `"America/Los_Angels" is not an IANA time zone: spec.scheduleSpec.timezone`,
	}, {
		name: "bad weekday",
		manifest: `
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: MetricsProducer
metadata: {name: bad-weekday}
spec:
  scheduleSpec:
    defaultReplicas: 0
    behaviors:
    - replicas: 3
      start: {weekdays: Mun-Fri, hours: "9"}
      end: {weekdays: Mon-Fri, hours: "17"}
`,
		want: `"Mun" is not a weekday: spec.scheduleSpec.behaviors[0].start.weekdays`,
	}, {
		name: "negative target value",
		manifest: `
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: negative-target}
spec:
  scaleTargetRef: {apiVersion: autoscaling.karpenter.sh/v1alpha1, kind: ScalableNodeGroup, name: general}
  maxReplicas: 3
  metrics:
  - prometheus: {query: "sum(up)", target: {type: Value, value: "-2"}}
`,
		want: "target value -2 must be greater than zero: spec.metrics[0].prometheus.target.value",
	}, {
		name: "malformed apiVersion",
		manifest: `
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: malformed-apiversion}
spec:
  scaleTargetRef: {apiVersion: apps/v1/beta, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
  - prometheus: {query: "sum(up)", target: {type: Value, value: "1"}}
`,
		want: "invalid value: apps/v1/beta: spec.scaleTargetRef.apiVersion",
	}} {
		t.Run(c.name, func(t *testing.T) {
			object := manifests.Decode(t, c.manifest)
			err := sandbox.Apply(context.Background(), stack.Env.Client, []*unstructured.Unstructured{object})
			if err == nil {
				t.Fatalf("admitted, want %q", deniedBy+c.want)
			}
			if !strings.Contains(err.Error(), deniedBy+c.want) {
				t.Errorf("error\n got %v\nwant %s", err, deniedBy+c.want)
			}
		})
	}
}

// TestHorizontalAutoscalerReadsBackWithDefaultedBehavior applies an autoscaler without
// behavior: read back, as `kubectl get -o yaml` shows it, it holds the behavior in force
// (docs/webhook.md, Defaulting).
func TestHorizontalAutoscalerReadsBackWithDefaultedBehavior(t *testing.T) {
	t.Parallel()
	object := manifests.Decode(t, `
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: HorizontalAutoscaler
metadata: {name: defaulted-behavior}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: defaulted-behavior}
  maxReplicas: 3
  metrics:
  - prometheus: {query: "sum(up)", target: {type: Value, value: "1"}}
`)
	object.SetNamespace(sandbox.Namespace) // for the Delete below; Apply would default it
	ctx := context.Background()
	if err := sandbox.Apply(ctx, stack.Env.Client, []*unstructured.Unstructured{object}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stack.Env.Client.Delete(ctx, object); err != nil {
			t.Errorf("deleting %s, %v", object.GetName(), err)
		}
	})
	got := &v1alpha1.HorizontalAutoscaler{}
	if err := stack.Env.Client.Get(ctx, client.ObjectKeyFromObject(object), got); err != nil {
		t.Fatal(err)
	}
	// What the autoscaler assumes for a behavior left out is what is stored.
	for direction, c := range map[string]struct {
		got  *v1alpha1.ScalingRules
		want autoscaler.Rules
	}{
		"scaleUp":   {got.Spec.Behavior.ScaleUp, autoscaler.ScaleUpRules(v1alpha1.Behavior{})},
		"scaleDown": {got.Spec.Behavior.ScaleDown, autoscaler.ScaleDownRules(v1alpha1.Behavior{})},
	} {
		if c.got == nil {
			t.Errorf("spec.behavior.%s not defaulted", direction)
			continue
		}
		stored := autoscaler.Rules{
			StabilizationWindow: time.Duration(ptr.Deref(c.got.StabilizationWindowSeconds, -1)) * time.Second,
			SelectPolicy:        ptr.Deref(c.got.SelectPolicy, ""),
			Policies:            c.got.Policies,
		}
		if !equality.Semantic.DeepEqual(stored, c.want) {
			t.Errorf("spec.behavior.%s\n got %+v\nwant %+v", direction, stored, c.want)
		}
	}
}
