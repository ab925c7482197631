package webhook

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/pkg/apis"
)

// validateLabels checks label keys and values as the apiserver checks them on objects, so
// that a selector or node label that could never match or be set is caught at admission.
func validateLabels(labels map[string]string, field string) *apis.FieldError {
	var errs *apis.FieldError
	for key, value := range labels {
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			errs = errs.Also(&apis.FieldError{
				Message: fmt.Sprintf("invalid label key %q: %s", key, strings.Join(msgs, "; ")),
				Paths:   []string{fmt.Sprintf("%s[%s]", field, key)},
			})
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			errs = errs.Also(&apis.FieldError{
				Message: fmt.Sprintf("invalid label value %q: %s", value, strings.Join(msgs, "; ")),
				Paths:   []string{fmt.Sprintf("%s[%s]", field, key)},
			})
		}
	}
	return errs
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// validateTaints checks taints as the apiserver checks a node's.
func validateTaints(taints []corev1.Taint) *apis.FieldError {
	var errs *apis.FieldError
	for i, taint := range taints {
		if msgs := validation.IsQualifiedName(taint.Key); len(msgs) > 0 {
			errs = errs.Also((&apis.FieldError{
				Message: fmt.Sprintf("invalid taint key %q: %s", taint.Key, strings.Join(msgs, "; ")),
				Paths:   []string{"key"},
			}).ViaFieldIndex("taints", i))
		}
		if taint.Value != "" {
			if msgs := validation.IsValidLabelValue(taint.Value); len(msgs) > 0 {
				errs = errs.Also((&apis.FieldError{
					Message: fmt.Sprintf("invalid taint value %q: %s", taint.Value, strings.Join(msgs, "; ")),
					Paths:   []string{"value"},
				}).ViaFieldIndex("taints", i))
			}
		}
		known := false
		for _, effect := range taintEffects {
			known = known || taint.Effect == effect
		}
		if !known {
			errs = errs.Also((&apis.FieldError{
				Message: fmt.Sprintf("invalid taint effect %q: expected one of %v", taint.Effect, taintEffects),
				Paths:   []string{"effect"},
			}).ViaFieldIndex("taints", i))
		}
	}
	return errs
}
