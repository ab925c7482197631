package v1_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

const validNodeClaim = `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-abcde}
spec:
  requirements:
    - {key: karpenter.sh/capacity-type, operator: Exists}
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// nodeClaimCase is one entry of testdata/nodeclaim-cases.yaml.
type nodeClaimCase struct {
	Name    string         `json:"name"`
	Spec    map[string]any `json:"spec"`
	Refused string         `json:"refused"`
}

// TestNodeClaimAdmission applies the NodeClaim CRD's schema and CEL rules on a real apiserver:
// what upstream Karpenter's CRD admits is admitted and what it refuses is refused, with a
// message naming the field or the rule.
func TestNodeClaimAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := context.Background()

	data, err := os.ReadFile("testdata/nodeclaim-cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []nodeClaimCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("reading testdata/nodeclaim-cases.yaml, %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			object := manifests.Decode(t, validNodeClaim)
			spec := object.Object["spec"].(map[string]any)
			for field, value := range tc.Spec {
				spec[field] = value
			}
			err := env.Client.Create(ctx, object, client.DryRunAll)
			switch {
			case tc.Refused == "" && err != nil:
				t.Errorf("refused with\n  %v\nwant admitted", err)
			case tc.Refused != "" && err == nil:
				t.Errorf("admitted, want a refusal containing\n  %s", tc.Refused)
			case tc.Refused != "" && !strings.Contains(err.Error(), tc.Refused):
				t.Errorf("refused with\n  %v\nwant a message containing\n  %s", err, tc.Refused)
			}
		})
	}

	t.Run("defaults and immutability", func(t *testing.T) {
		if err := env.Client.Create(ctx, manifests.Decode(t, validNodeClaim)); err != nil {
			t.Fatalf("a valid NodeClaim was refused, %v", err)
		}
		stored := &v1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default-abcde"}, stored); err != nil {
			t.Fatal(err)
		}
		if got := stored.Spec.ExpireAfter.String(); got != "720h" {
			t.Errorf("expireAfter defaulted to %s, want upstream's 720h", got)
		}
		changed := stored.DeepCopy()
		changed.Spec.Taints = []v1.Taint{{Key: "a", Effect: "NoSchedule"}}
		err := env.Client.Update(ctx, changed)
		if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			t.Errorf("a change to the spec was answered with %v, want \"spec is immutable\"", err)
		}
		// Status is written through its subresource and is not immutable.
		stored.Status.ProviderID = "aws:///us-west-2a/i-0123456789abcdef0"
		stored.SetCondition(v1.ConditionTypeLaunched, "True", "Launched", "")
		if err := env.Client.Status().Update(ctx, stored); err != nil {
			t.Errorf("writing the status, %v", err)
		}
		// Read back as unstructured: the wire form of the duration is upstream's.
		raw := &unstructured.Unstructured{}
		raw.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("NodeClaim"))
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default-abcde"}, raw); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(raw.Object, "spec", "expireAfter"); got != "720h" {
			t.Errorf("spec.expireAfter reads %q, want 720h", got)
		}
	})
}

func TestNillableDuration(t *testing.T) {
	duration := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		in, out string
		want    *time.Duration
	}{
		{in: `"Never"`, out: `"Never"`},
		{in: `"720h"`, out: `"720h"`, want: duration(720 * time.Hour)},
		{in: `"1h30m"`, out: `"1h30m"`, want: duration(90 * time.Minute)},
		{in: `"90m"`, out: `"1h30m"`, want: duration(90 * time.Minute)},
		{in: `"45s"`, out: `"45s"`, want: duration(45 * time.Second)},
		{in: `"0s"`, out: `"0s"`, want: duration(time.Duration(0))},
	} {
		var d v1.NillableDuration
		if err := d.UnmarshalJSON([]byte(tc.in)); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if (d.Duration == nil) != (tc.want == nil) || (d.Duration != nil && *d.Duration != *tc.want) {
			t.Errorf("%s read as %v, want %v", tc.in, d.Duration, tc.want)
		}
		out, err := d.MarshalJSON()
		if err != nil || string(out) != tc.out {
			t.Errorf("%s written as %s (%v), want %s", tc.in, out, err, tc.out)
		}
	}
	var d v1.NillableDuration
	if err := d.UnmarshalJSON([]byte(`"soon"`)); err == nil {
		t.Errorf(`"soon" was read as a duration`)
	}
}
