package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
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

// warnings records the warnings the apiserver returns, as kubectl prints them.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

// warnedClient is a client whose requests record the apiserver's warnings.
func warnedClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	recorded := &warnings{}
	config := rest.CopyConfig(stack.Env.Config)
	config.WarningHandler = recorded
	c, err := client.New(config, client.Options{Scheme: stack.Env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, recorded
}

// expectProvisionerWarning waits for a Warning Event on the Provisioner containing message.
func expectProvisionerWarning(t *testing.T, name, message string) {
	t.Helper()
	eventually.Holds(t, "a Warning Event on provisioner "+name, func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := stack.Env.Client.List(context.Background(), events, client.MatchingFields{"involvedObject.name": name}); err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Provisioner" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, message) {
				return true, "", nil
			}
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
		}
		return false, fmt.Sprintf("events %q", seen), nil
	}, eventually.Timeout(waitTimeout))
}

// TestTTLSecondsUntilExpiredZeroWarns is finding 4 of issue 34: ttlSecondsUntilExpired: 0
// replaces every node of the Provisioner, one after another, without end. Karpenter v0.5
// accepted it, so it still applies, but whoever applies it is told, and so is whoever reads
// the Provisioner's Events.
func TestTTLSecondsUntilExpiredZeroWarns(t *testing.T) {
	t.Parallel()
	const name = "ttl-until-expired-zero"
	const said = "ttlSecondsUntilExpired is 0: every node of this Provisioner expires as soon as it is launched"
	c, recorded := warnedClient(t)
	p := builders.Provisioner(builders.ProvisionerOptions{Name: name,
		// No pod tolerates it: the Provisioner launches nothing for other tests' pods.
		Taints: []corev1.Taint{{Key: "e2e.karpenter.sh/" + name, Effect: corev1.TaintEffectNoSchedule}}})
	p.Spec.TTLSecondsUntilExpired = ptr.To[int64](0)
	ctx := context.Background()
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stack.Env.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting provisioner %s, %v", name, err)
		}
	})
	if !strings.Contains(recorded.String(), said) {
		t.Errorf("warnings on create\n  %q\nwant one containing\n  %s", recorded.String(), said)
	}
	expectProvisionerWarning(t, name, said)
}
