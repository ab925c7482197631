package status_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/nodepool/status"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func nodePool(group, kind, class string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 3}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: group, Kind: kind, Name: class}
	return np
}

func class(ready *metav1.Condition) *awsv1.EC2NodeClass {
	c := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 7}}
	if ready != nil {
		c.Status.Conditions = []metav1.Condition{*ready}
	}
	return c
}

func TestDecide(t *testing.T) {
	const group, kind = "karpenter.k8s.aws", "EC2NodeClass"
	for _, tc := range []struct {
		name              string
		pool              *v1.NodePool
		class             *awsv1.EC2NodeClass
		classReady, ready metav1.ConditionStatus
		reason            string
	}{
		{"a ready class makes the pool ready", nodePool(group, kind, "default"), class(&metav1.Condition{Type: "Ready", Status: "True", Reason: "Ready"}),
			"True", "True", "Ready"},
		{"a missing class", nodePool(group, kind, "default"), nil, "False", "False", status.ReasonNodeClassNotFound},
		{"a class not reconciled yet", nodePool(group, kind, "default"), class(nil), "Unknown", "Unknown", status.ReasonNodeClassNotReconciled},
		{"a class that is not ready says why", nodePool(group, kind, "default"),
			class(&metav1.Condition{Type: "Ready", Status: "False", Reason: "SubnetsNotFound", Message: "no subnet matches"}), "False", "False", "SubnetsNotFound"},
		{"a kind this Karpenter does not serve", nodePool("karpenter.azure.com", "AKSNodeClass", "default"), nil, "False", "False", status.ReasonNodeClassKindNotServed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := status.Decide(tc.pool, tc.class, nil)
			for conditionType, want := range map[string]metav1.ConditionStatus{
				v1.ConditionTypeValidationSucceeded: "True", v1.ConditionTypeNodeClassReady: tc.classReady, v1.ConditionTypeReady: tc.ready,
			} {
				c := meta.FindStatusCondition(got.Conditions, conditionType)
				if c == nil || c.Status != want || c.ObservedGeneration != 3 {
					t.Errorf("%s: %+v, want %s at the pool's generation", conditionType, c, want)
				}
			}
			if c := meta.FindStatusCondition(got.Conditions, v1.ConditionTypeReady); c != nil && c.Reason != tc.reason {
				t.Errorf("Ready's reason %q, want %q", c.Reason, tc.reason)
			}
			if tc.class != nil && got.NodeClassObservedGeneration != 7 {
				t.Errorf("nodeClassObservedGeneration %d, want the class's 7", got.NodeClassObservedGeneration)
			}
		})
	}
}

func TestDecideCountsTheNodeClaimsAndKeepsTransitionTimes(t *testing.T) {
	ready := class(&metav1.Condition{Type: "Ready", Status: "True", Reason: "Ready"})
	pool := nodePool("karpenter.k8s.aws", "EC2NodeClass", "default")
	claim := func(pairs ...string) v1.NodeClaim {
		return v1.NodeClaim{Status: v1.NodeClaimStatus{Capacity: builders.Resources(pairs...)}}
	}
	got := status.Decide(pool, ready, []v1.NodeClaim{claim("cpu", "2", "memory", "8Gi"), claim("cpu", "4", "memory", "16Gi")})
	if got.Nodes == nil || *got.Nodes != 2 || !builders.EqualResources(got.Resources, builders.Resources("cpu", "6", "memory", "24Gi")) {
		t.Errorf("nodes %v, resources %v; want 2 nodes of 6 cpu and 24Gi", got.Nodes, got.Resources)
	}
	before := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := range got.Conditions {
		got.Conditions[i].LastTransitionTime = before
	}
	pool.Status = got
	again := status.Decide(pool, ready, nil)
	if c := meta.FindStatusCondition(again.Conditions, v1.ConditionTypeReady); c == nil || !c.LastTransitionTime.Equal(&before) {
		t.Errorf("Ready %+v: an unchanged condition keeps its transition time %v", c, before)
	}
	if *again.Nodes != 0 || again.Resources != nil {
		t.Errorf("no NodeClaims left: nodes %d, resources %v; want none", *again.Nodes, again.Resources)
	}
}
