package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
)

// horizontalAutoscaler gives v1alpha1.HorizontalAutoscaler its admission semantics.
type horizontalAutoscaler struct {
	v1alpha1.HorizontalAutoscaler
	// access checks the requester may scale the target; validation only.
	access ScaleAccess
}

func (h *horizontalAutoscaler) DeepCopyObject() runtime.Object {
	return &horizontalAutoscaler{HorizontalAutoscaler: *h.HorizontalAutoscaler.DeepCopy(), access: h.access}
}

func (h *horizontalAutoscaler) SupportedSubResources() []string { return mainResourceOnly }

func (h *horizontalAutoscaler) SupportedVerbs() []admissionregistrationv1.OperationType {
	return createAndUpdate
}

func (h *horizontalAutoscaler) SetDefaults(ctx context.Context) {
	if apis.IsInStatusUpdate(ctx) {
		return
	}
	DefaultHorizontalAutoscaler(&h.HorizontalAutoscaler)
}

func (h *horizontalAutoscaler) Validate(ctx context.Context) *apis.FieldError {
	if skipValidation(ctx, func(old *horizontalAutoscaler) bool {
		// The new object has been defaulted, the stored one maybe not.
		defaulted := old.HorizontalAutoscaler.DeepCopy()
		DefaultHorizontalAutoscaler(defaulted)
		return equality.Semantic.DeepEqual(defaulted.Spec, h.Spec)
	}) {
		return nil
	}
	if errs := ValidateHorizontalAutoscaler(&h.HorizontalAutoscaler); errs != nil {
		return errs
	}
	// Every create and every spec change: whoever sets the metrics and bounds drives the target.
	return validateScaleAccess(ctx, h.access, &h.HorizontalAutoscaler)
}

// DefaultHorizontalAutoscaler writes out the scale-up and scale-down rules the autoscaler
// applies to fields left unset, so the object shows the behaviour in force.
func DefaultHorizontalAutoscaler(h *v1alpha1.HorizontalAutoscaler) {
	h.Spec.Behavior.ScaleUp = resolvedRules(autoscaler.ScaleUpRules(h.Spec.Behavior))
	h.Spec.Behavior.ScaleDown = resolvedRules(autoscaler.ScaleDownRules(h.Spec.Behavior))
}

func resolvedRules(rules autoscaler.Rules) *v1alpha1.ScalingRules {
	// The window is the spec's int32 seconds or a default of minutes, so it fits.
	window := int32(rules.StabilizationWindow / time.Second) //nolint:gosec // G115, see above.
	selectPolicy := rules.SelectPolicy
	// Copied: the autoscaler's default policies are shared.
	policies := append([]v1alpha1.ScalingPolicy(nil), rules.Policies...)
	// A tolerance left unset stays unset: the controller's flag supplies it.
	return &v1alpha1.ScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &selectPolicy, Policies: policies, Tolerance: rules.Tolerance}
}

// ValidateHorizontalAutoscaler checks what the CRD schema cannot: the scale target's
// apiVersion, that every query is PromQL evaluating to an instant value, and that targets
// are positive.
func ValidateHorizontalAutoscaler(h *v1alpha1.HorizontalAutoscaler) *apis.FieldError {
	var errs *apis.FieldError
	errs = errs.Also(validateAPIVersion(h.Spec.ScaleTargetRef.APIVersion).ViaField("scaleTargetRef").ViaField("spec"))
	for i, metric := range h.Spec.Metrics {
		if metric.Prometheus == nil {
			continue
		}
		errs = errs.Also(validatePrometheusMetric(metric.Prometheus).ViaField("prometheus").ViaFieldIndex("metrics", i).ViaField("spec"))
	}
	for _, direction := range []struct {
		name  string
		rules *v1alpha1.ScalingRules
	}{{"scaleUp", h.Spec.Behavior.ScaleUp}, {"scaleDown", h.Spec.Behavior.ScaleDown}} {
		rules := direction.rules
		if rules == nil || rules.Tolerance == nil {
			continue
		}
		// As --horizontalautoscaler-tolerance: a band of 100 % or more would hold any value.
		message := ""
		switch {
		case rules.Tolerance.Sign() < 0:
			message = fmt.Sprintf("tolerance %s must not be negative: it is a fraction of the target", rules.Tolerance.String())
		case rules.Tolerance.Cmp(resource.MustParse("1")) >= 0:
			message = fmt.Sprintf("tolerance %s must be less than 1: it is a fraction of the target, and a band of 100%% or more never scales", rules.Tolerance.String())
		}
		if message != "" {
			errs = errs.Also((&apis.FieldError{Message: message, Paths: []string{"tolerance"}}).
				ViaField(direction.name).ViaField("behavior").ViaField("spec"))
		}
	}
	return errs
}

func validateAPIVersion(apiVersion string) *apis.FieldError {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		return apis.ErrInvalidValue(apiVersion, "apiVersion", "expected <group>/<version>, e.g. apps/v1, or <version> for the core group")
	}
	if gv.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(gv.Group); len(msgs) > 0 {
			return apis.ErrInvalidValue(apiVersion, "apiVersion", fmt.Sprintf("group %q: %s", gv.Group, msgs[0]))
		}
	}
	if msgs := validation.IsDNS1035Label(gv.Version); len(msgs) > 0 {
		return apis.ErrInvalidValue(apiVersion, "apiVersion", fmt.Sprintf("version %q: %s", gv.Version, msgs[0]))
	}
	return nil
}

func validatePrometheusMetric(m *v1alpha1.PrometheusMetricSource) *apis.FieldError {
	var errs *apis.FieldError
	if len(m.Query) > v1alpha1.MaxQueryLength {
		// Refused before parsing: the CRD refuses it too, and the parser's work grows with it.
		return errs.Also(&apis.FieldError{
			Message: fmt.Sprintf("the query is %d bytes long; it may be at most %d", len(m.Query), v1alpha1.MaxQueryLength),
			Paths:   []string{"query"},
		})
	}
	if expr, err := parser.ParseExpr(m.Query); err != nil {
		errs = errs.Also(&apis.FieldError{Message: fmt.Sprintf("invalid PromQL: %v", err), Paths: []string{"query"}})
	} else if t := expr.Type(); t != parser.ValueTypeScalar && t != parser.ValueTypeVector {
		kind := string(t)
		if t == parser.ValueTypeMatrix {
			kind = "range vector"
		}
		errs = errs.Also(&apis.FieldError{
			Message: fmt.Sprintf("the query evaluates to a %s; it must evaluate to a scalar or an instant vector", kind),
			Paths:   []string{"query"},
		})
	}
	if m.Target.Value.Sign() <= 0 {
		errs = errs.Also(&apis.FieldError{
			Message: fmt.Sprintf("target value %s must be greater than zero", m.Target.Value.String()),
			Paths:   []string{"target.value"},
		})
	}
	return errs
}
