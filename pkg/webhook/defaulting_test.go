package webhook_test

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/webhook/resourcesemantics"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/webhook"
)

func TestDefaultHorizontalAutoscalerKeepsWhatIsSet(t *testing.T) {
	h := horizontalAutoscaler("ha", func(s *v1alpha1.HorizontalAutoscalerSpec) {
		s.Behavior.ScaleUp = &v1alpha1.ScalingRules{SelectPolicy: ptr.To(v1alpha1.DisabledPolicySelect)}
		s.Behavior.ScaleDown = &v1alpha1.ScalingRules{Policies: []v1alpha1.ScalingPolicy{{Type: v1alpha1.CountScalingPolicy, Value: 1, PeriodSeconds: 60}},
			Tolerance: ptr.To(resource.MustParse("0"))}
	})
	webhook.DefaultHorizontalAutoscaler(h)
	up, down := h.Spec.Behavior.ScaleUp, h.Spec.Behavior.ScaleDown
	if *up.SelectPolicy != v1alpha1.DisabledPolicySelect || *up.StabilizationWindowSeconds != 0 || len(up.Policies) != 2 {
		t.Errorf("scaleUp %+v", up)
	}
	if *down.SelectPolicy != v1alpha1.MaxPolicySelect || *down.StabilizationWindowSeconds != 300 || len(down.Policies) != 1 || down.Policies[0].PeriodSeconds != 60 {
		t.Errorf("scaleDown %+v", down)
	}
	// A tolerance set is kept; one left unset stays unset, for the controller's flag to supply.
	if down.Tolerance == nil || !down.Tolerance.IsZero() || up.Tolerance != nil {
		t.Errorf("tolerances up %v down %v, want unset and 0", up.Tolerance, down.Tolerance)
	}
	// The defaults written are the autoscaler's, and writing them shares nothing with it.
	up.Policies[0].Value = 7
	if autoscaler.ScaleUpRules(v1alpha1.Behavior{}).Policies[0].Value == 7 {
		t.Error("defaulting aliased the autoscaler's default policies")
	}
	again := h.DeepCopy()
	webhook.DefaultHorizontalAutoscaler(again)
	if !apiEqual(again.Spec, h.Spec) {
		t.Error("defaulting is not idempotent")
	}
}

func TestDefaultMetricsProducerTimezone(t *testing.T) {
	m := scheduleProducer("mp", nil)
	webhook.DefaultMetricsProducer(m)
	if *m.Spec.ScheduleSpec.Timezone != webhook.DefaultTimezone {
		t.Errorf("timezone %q", *m.Spec.ScheduleSpec.Timezone)
	}
	m = scheduleProducer("mp", func(s *v1alpha1.ScheduleSpec) { s.Timezone = ptr.To("Europe/Paris") })
	webhook.DefaultMetricsProducer(m)
	if *m.Spec.ScheduleSpec.Timezone != "Europe/Paris" {
		t.Errorf("timezone %q", *m.Spec.ScheduleSpec.Timezone)
	}
	queue := queueProducer("q", "arn:aws:sqs:us-west-2:123456789012:jobs")
	webhook.DefaultMetricsProducer(queue)
	if queue.Spec.ScheduleSpec != nil {
		t.Error("a queue producer got a schedule")
	}
}

func TestValidationAdmitsGoodObjects(t *testing.T) {
	for _, object := range goodObjects() {
		if err := admit(object); err != nil {
			t.Errorf("%s: %v", object.GetName(), err)
		}
	}
}

// admissionType is h decoded into the type the validating admission controller uses for a
// HorizontalAutoscaler, as it decodes a request's object.
func admissionType(t *testing.T, access webhook.ScaleAccess, h *v1alpha1.HorizontalAutoscaler) resourcesemantics.GenericCRD {
	t.Helper()
	crd := webhook.ValidationTypes(awsIDs(), access)[v1alpha1.SchemeGroupVersion.WithKind("HorizontalAutoscaler")].DeepCopyObject().(resourcesemantics.GenericCRD)
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestValidateOnlyChangedSpecs goes through the types the admission controllers use: an
// update that leaves the spec as stored is admitted even when that spec is invalid, while
// status updates are never validated.
func TestValidateOnlyChangedSpecs(t *testing.T) {
	decode := func(h *v1alpha1.HorizontalAutoscaler) resourcesemantics.GenericCRD {
		return admissionType(t, scaleAccess{}, h)
	}
	stored := horizontalAutoscaler("ha", withQuery("rate(x[5m]"))
	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	webhook.DefaultHorizontalAutoscaler(relabelled) // as the defaulting webhook has
	changed := relabelled.DeepCopy()
	changed.Spec.MaxReplicas = 20

	ctx := context.Background()
	if err := decode(stored).Validate(apis.WithinCreate(ctx)); err == nil {
		t.Error("create admitted an invalid query")
	}
	if err := decode(relabelled).Validate(apis.WithinUpdate(ctx, decode(stored))); err != nil {
		t.Errorf("relabelling: %v", err)
	}
	if err := decode(changed).Validate(apis.WithinUpdate(ctx, decode(stored))); err == nil {
		t.Error("a spec change kept an invalid query")
	}
	if err := decode(changed).Validate(apis.WithinSubResourceUpdate(ctx, decode(stored), "status")); err != nil {
		t.Errorf("status update: %v", err)
	}
}

func apiEqual(a, b v1alpha1.HorizontalAutoscalerSpec) bool {
	return equality.Semantic.DeepEqual(a, b)
}
