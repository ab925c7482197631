package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/webhook/resourcesemantics"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/webhook"
)

// awsIDs validates ids as cmd/webhook does.
func awsIDs() *cloudprovider.Registry {
	r := cloudprovider.NewRegistry()
	aws.RegisterIDs(r)
	return r
}

// admit defaults and validates object as the webhook does on create.
func admit(object client.Object) *apis.FieldError {
	switch o := object.(type) {
	case *v1alpha1.HorizontalAutoscaler:
		webhook.DefaultHorizontalAutoscaler(o)
		return webhook.ValidateHorizontalAutoscaler(o)
	case *v1alpha1.MetricsProducer:
		webhook.DefaultMetricsProducer(o)
		return webhook.ValidateMetricsProducer(o, awsIDs())
	case *v1alpha1.ScalableNodeGroup:
		return webhook.ValidateScalableNodeGroup(o, awsIDs())
	case *v1alpha5.Provisioner:
		webhook.DefaultProvisioner(context.Background(), o, awsIDs())
		return webhook.ValidateProvisioner(context.Background(), o, awsIDs())
	}
	panic(fmt.Sprintf("no admission for %T", object))
}

func TestValidationRejectsCorpus(t *testing.T) {
	for _, c := range badObjects() {
		t.Run(c.name, func(t *testing.T) {
			err := admit(c.object.DeepCopyObject().(client.Object))
			if err == nil {
				t.Fatalf("admitted, want %q", c.want)
			}
			if n := len(err.WrappedErrors()); n != 1 {
				t.Errorf("%d errors, want 1: %v", n, err)
			}
			if got := firstLine(err.Error()); got != c.want {
				t.Errorf("message\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestValidationAsksTheCloudsRegistry checks that ids are validated by whatever the clouds
// registered, through the types the admission controller uses as well as directly.
func TestValidationAsksTheCloudsRegistry(t *testing.T) {
	none := cloudprovider.NewRegistry()
	group := nodeGroup("sng", v1alpha1.AWSEKSNodeGroup, "sandbox/general")
	if err := webhook.ValidateScalableNodeGroup(group, none); err == nil || !strings.HasSuffix(firstLine(err.Error()), ": spec.type") {
		t.Errorf("unregistered node group type: %v, want an error at spec.type", err)
	}
	producer := queueProducer("mp", "arn:aws:sqs:us-west-2:123456789012:jobs")
	if err := webhook.ValidateMetricsProducer(producer, none); err == nil || !strings.HasSuffix(firstLine(err.Error()), ": spec.queue.type") {
		t.Errorf("unregistered queue type: %v, want an error at spec.queue.type", err)
	}

	ctx := apis.WithinCreate(context.Background())
	for kind, object := range map[string]any{"ScalableNodeGroup": nodeGroup("sng", v1alpha1.AWSEKSNodeGroup, "general"), "MetricsProducer": queueProducer("mp", "jobs")} {
		crd := webhook.ValidationTypes(awsIDs(), scaleAccess{})[v1alpha1.SchemeGroupVersion.WithKind(kind)].DeepCopyObject().(resourcesemantics.GenericCRD)
		raw, err := json.Marshal(object)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, crd); err != nil {
			t.Fatal(err)
		}
		if err := crd.Validate(ctx); err == nil || !strings.Contains(err.Error(), "invalid id") {
			t.Errorf("%s with an invalid id: %v", kind, err)
		}
	}
}

// TestValidationReportsEveryInvalidScheduleField: one look at the error shows all to fix.
func TestValidationReportsEveryInvalidScheduleField(t *testing.T) {
	mp := scheduleProducer("mp-two", func(s *v1alpha1.ScheduleSpec) {
		s.Behaviors[0].Start.Weekdays = ptr.To("Mun")
		s.Behaviors[0].Start.Hours = ptr.To("25")
	})
	err := admit(mp)
	if err == nil {
		t.Fatal("admitted a schedule with two invalid fields")
	}
	for _, want := range []string{
		`"Mun" is not a weekday: spec.scheduleSpec.behaviors[0].start.weekdays`,
		`"25" is not an hour (0-23): spec.scheduleSpec.behaviors[0].start.hours`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\ndoes not report %s", err, want)
		}
	}
}

// TestQueryLongerThanTheMaximumIsRefusedUnparsed: the CRD refuses such a query before the
// webhook sees it; the webhook says the same on its own, before parsing it.
func TestQueryLongerThanTheMaximumIsRefusedUnparsed(t *testing.T) {
	longest := `vector(1)` + strings.Repeat(" ", v1alpha1.MaxQueryLength-len(`vector(1)`))
	if err := admit(horizontalAutoscaler("longest", withQuery(longest))); err != nil {
		t.Errorf("a query of exactly %d bytes was refused: %v", v1alpha1.MaxQueryLength, err)
	}
	// Unclosed on purpose: the length is reported, not a parse error.
	tooLong := `sum(` + strings.Repeat("x", v1alpha1.MaxQueryLength)
	err := admit(horizontalAutoscaler("too-long", withQuery(tooLong)))
	want := fmt.Sprintf("the query is %d bytes long; it may be at most 4096: spec.metrics[0].prometheus.query", len(tooLong))
	if err == nil || firstLine(err.Error()) != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}
