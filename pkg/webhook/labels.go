package webhook

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
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

// validateKubeletLabels refuses what the kubelet refuses in its --node-labels, which a
// Provisioner's labels become: a label in the kubernetes.io or k8s.io namespaces that is not one
// a kubelet may set on its own Node (kubeletapis.IsKubeletLabel). The kubelet would not start,
// and the node never join. The CRD says the same in CEL.
func validateKubeletLabels(labels map[string]string, field string) *apis.FieldError {
	var errs *apis.FieldError
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if isKubernetesLabel(key) && !kubeletapis.IsKubeletLabel(key) {
			errs = errs.Also(&apis.FieldError{
				Message: fmt.Sprintf("the kubelet refuses to register a node with label %s: in the kubernetes.io and k8s.io namespaces it takes only labels under %s and those it sets itself (%s)",
					key, strings.Join(suffixed(kubeletapis.KubeletLabelNamespaces(), "/"), " and "), strings.Join(kubeletapis.KubeletLabels(), ", ")),
				Paths: []string{fmt.Sprintf("%s[%s]", field, key)},
			})
		}
	}
	return errs
}

// isKubernetesLabel is whether the key is in the kubernetes.io or k8s.io namespaces, or a
// subdomain of either, as the kubelet reads its --node-labels.
func isKubernetesLabel(key string) bool {
	namespace, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	for _, reserved := range []string{"kubernetes.io", "k8s.io"} {
		if namespace == reserved || strings.HasSuffix(namespace, "."+reserved) {
			return true
		}
	}
	return false
}

func suffixed(values []string, suffix string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v + suffix
	}
	return out
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
