package scheduling

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ErrEmptyTerm is why an empty required node selector term selects no node.
var ErrEmptyTerm = errors.New("an empty node selector term matches no node")

// RequirementsFromTerm combines a pod's nodeSelector with one node selector term, nil for
// none. An empty term adds nothing, as an empty preferred term prefers every node. Terms on
// node fields select existing nodes by name, which a new node cannot satisfy.
func RequirementsFromTerm(nodeSelector map[string]string, term *corev1.NodeSelectorTerm) (Requirements, error) {
	rs := Requirements{}
	for k, v := range nodeSelector {
		if err := rs.Add(k, corev1.NodeSelectorOpIn, v); err != nil {
			return nil, err
		}
	}
	if term == nil {
		return rs, nil
	}
	if len(term.MatchFields) > 0 {
		return nil, fmt.Errorf("node affinity matchFields selects existing nodes by name; a new node cannot satisfy it")
	}
	for _, expr := range term.MatchExpressions {
		if err := rs.Add(expr.Key, expr.Operator, expr.Values...); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// RequirementsFromRequiredTerm is RequirementsFromTerm for a term of required node affinity,
// where an empty term matches no node.
func RequirementsFromRequiredTerm(nodeSelector map[string]string, term *corev1.NodeSelectorTerm) (Requirements, error) {
	if term != nil && len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return nil, ErrEmptyTerm
	}
	return RequirementsFromTerm(nodeSelector, term)
}

// CheckNodeAffinity returns nil when a node with labels meets the pod's nodeSelector and
// required node affinity, else why not. Required terms are ORed, the expressions of a term
// ANDed; a term that is empty, invalid or on node fields (a name is not a label) matches
// nothing.
func CheckNodeAffinity(pod *corev1.Pod, labels map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		value := pod.Spec.NodeSelector[key]
		if actual, ok := labels[key]; !ok || actual != value {
			return fmt.Errorf("nodeSelector %s=%s does not match the node's labels", key, value)
		}
	}
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	terms := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		if rs, err := RequirementsFromRequiredTerm(nil, &terms[i]); err == nil && rs.MatchesLabels(labels) {
			return nil
		}
	}
	return fmt.Errorf("required node affinity does not match the node's labels")
}
