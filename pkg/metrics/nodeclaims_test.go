package metrics_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/test/counters"
)

// nodeClaim is a NodeClaim of the pool, with the labels and annotations given and the
// lifecycle conditions given True.
func nodeClaim(labels, annotations map[string]string, trueConditions ...string) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc", Labels: labels, Annotations: annotations}}
	for _, conditionType := range trueConditions {
		nc.SetCondition(conditionType, metav1.ConditionTrue, conditionType, "")
	}
	return nc
}

// TestNodePoolLabelOfProvisionersAndNodePools: the nodepool label is a NodePool's name, and the
// Provisioner's for what a Provisioner launched, whether read off a node or a NodeClaim.
func TestNodePoolLabelOfProvisionersAndNodePools(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"a Provisioner's", map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}, "default"},
		{"a NodePool's", map[string]string{v1.NodePoolLabelKey: "general"}, "general"},
		{"the NodePool's over a stale Provisioner label", map[string]string{v1.NodePoolLabelKey: "general", v1alpha5.ProvisionerNameLabelKey: "default"}, "general"},
		{"none: not Karpenter's", map[string]string{corev1.LabelHostname: "node-1"}, ""},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
		if got := metrics.NodePool(node); got != tc.want {
			t.Errorf("%s: node's nodepool %q, want %q", tc.name, got, tc.want)
		}
		if got := metrics.NodePool(nodeClaim(tc.labels, nil)); got != tc.want {
			t.Errorf("%s: nodeclaim's nodepool %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNodeClaimCreatedLabels: created_total has upstream's labels, min_values_relaxed "false"
// unless the NodeClaim says it was relaxed.
func TestNodeClaimCreatedLabels(t *testing.T) {
	for _, tc := range []struct {
		pool, reason, annotation, wantRelaxed string
	}{
		{"created-provisioned", metrics.ReasonProvisioned, "", "false"},
		{"created-replacement", metrics.ReasonUnderutilized, "", "false"},
		{"created-relaxed", metrics.ReasonProvisioned, "true", "true"},
	} {
		var annotations map[string]string
		if tc.annotation != "" {
			annotations = map[string]string{v1.NodeClaimMinValuesRelaxedAnnotationKey: tc.annotation}
		}
		want := map[string]string{"reason": tc.reason, "nodepool": tc.pool, "min_values_relaxed": tc.wantRelaxed}
		created := counters.MarkNow(t, "karpenter_nodeclaims_created_total", want)
		metrics.NodeClaimCreated(nodeClaim(map[string]string{v1alpha5.ProvisionerNameLabelKey: tc.pool}, annotations), tc.reason)
		if got := created.Increase(); got != 1 {
			t.Errorf("karpenter_nodeclaims_created_total %v grew by %v, want 1", want, got)
		}
	}
}

// TestNodeClaimConditionsWrittenCountsTransitionsOnly: a condition is counted when the write made
// it True, never when it was True already or is not True after.
func TestNodeClaimConditionsWrittenCountsTransitionsOnly(t *testing.T) {
	launched, registered, initialized := v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized
	for _, tc := range []struct {
		pool          string
		before, after []string
		// want are the families counted, by their condition.
		want map[string]float64
	}{
		{"written-launch", nil, []string{launched}, map[string]float64{launched: 1}},
		{"written-registration", []string{launched}, []string{launched, registered}, map[string]float64{registered: 1}},
		{"written-both", []string{launched}, []string{launched, registered, initialized}, map[string]float64{registered: 1, initialized: 1}},
		{"written-again", []string{launched, registered}, []string{launched, registered}, nil},
		{"written-nothing-true", nil, nil, nil},
	} {
		labels := map[string]string{v1alpha5.ProvisionerNameLabelKey: tc.pool}
		families := map[string]string{
			launched: "karpenter_nodeclaims_launched_total", registered: "karpenter_nodeclaims_registered_total", initialized: "karpenter_nodeclaims_initialized_total",
		}
		marks := map[string]counters.Mark{}
		for conditionType, family := range families {
			marks[conditionType] = counters.MarkNow(t, family, map[string]string{"nodepool": tc.pool})
		}
		metrics.NodeClaimConditionsWritten(nodeClaim(labels, nil, tc.before...), nodeClaim(labels, nil, tc.after...))
		for conditionType, family := range families {
			if got := marks[conditionType].Increase(); got != tc.want[conditionType] {
				t.Errorf("%s: %s grew by %v, want %v", tc.pool, family, got, tc.want[conditionType])
			}
		}
	}
}

// TestNodeClaimDisruptedAndTerminatedLabels: disrupted_total and terminated_total read their
// labels off the node or NodeClaim; the termination's duration is observed by nodepool.
func TestNodeClaimDisruptedAndTerminatedLabels(t *testing.T) {
	labels := map[string]string{v1alpha5.ProvisionerNameLabelKey: "labelled", v1.CapacityTypeLabelKey: v1.CapacityTypeSpot, corev1.LabelTopologyZone: "us-west-2b"}
	disruptedLabels := map[string]string{"reason": "expired", "nodepool": "labelled", "capacity_type": "spot"}
	disrupted := counters.MarkNow(t, "karpenter_nodeclaims_disrupted_total", disruptedLabels)
	metrics.NodeClaimDisrupted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}, metrics.ReasonExpired)
	if got := disrupted.Increase(); got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total %v grew by %v, want 1", disruptedLabels, got)
	}
	terminatedLabels := map[string]string{"nodepool": "labelled", "capacity_type": "spot", "zone": "us-west-2b"}
	terminated := counters.MarkNow(t, "karpenter_nodeclaims_terminated_total", terminatedLabels)
	durations := counters.MarkNow(t, "karpenter_nodeclaims_termination_duration_seconds", map[string]string{"nodepool": "labelled"})
	metrics.NodeClaimTerminated(nodeClaim(labels, nil), 90*time.Second)
	if got := terminated.Increase(); got != 1 {
		t.Errorf("karpenter_nodeclaims_terminated_total %v grew by %v, want 1", terminatedLabels, got)
	}
	if got := durations.Increase(); got != 1 {
		t.Errorf("karpenter_nodeclaims_termination_duration_seconds got %v samples, want 1", got)
	}
}
