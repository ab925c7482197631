package disruption_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
)

var decideNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// candidate is an initialized NodeClaim of the NodePool with its Ready node, conditions set True,
// with pods of the deployment "app".
func candidate(name string, np *v1.NodePool, podCount int, conditions ...string) *disruption.Candidate {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	for _, c := range conditions {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue})
	}
	c := &disruption.Candidate{NodeClaim: nc, NodePool: np, Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}}
	for i := range podCount {
		c.Pods = append(c.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + string(rune('a'+i)), Namespace: "default", Labels: map[string]string{"app": "app"}}})
	}
	return c
}

func pool(name string, budgets ...v1.Budget) *v1.NodePool {
	return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Disruption: v1.Disruption{Budgets: budgets}}}
}

func names(cs []*disruption.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name())
	}
	return out
}

func blockers(pdbs ...policyv1.PodDisruptionBudget) func(*disruption.Candidate) *disruption.Blocked {
	return func(c *disruption.Candidate) *disruption.Blocked {
		blocked, _ := disruption.Block(c, pdbs, decideNow)
		return blocked
	}
}

func TestDecide(t *testing.T) {
	one := pool("one", v1.Budget{Nodes: "1"})
	all := pool("all", v1.Budget{Nodes: "100%"})
	noDrift := pool("nodrift", v1.Budget{Nodes: "100%"}, v1.Budget{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}})
	for _, tc := range []struct {
		name        string
		candidates  func() []*disruption.Candidate
		pdbs        []policyv1.PodDisruptionBudget
		wantEmpty   []string
		wantDrifted []string
		// wantUnder are the underutilized candidates.
		wantUnder   []string
		wantBlocked map[string]string
	}{
		{name: "empty and consolidatable goes; empty not yet consolidatable stays; one with pods is not empty",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", all, 0, v1.ConditionTypeConsolidatable), candidate("b", all, 0), candidate("c", all, 1, v1.ConditionTypeConsolidatable)}
			}, wantEmpty: []string{"a"}, wantUnder: []string{"c"}},
		{name: "underutilized: consolidatable nodes with pods under WhenEmptyOrUnderutilized and Balanced, not WhenEmpty, within the budget for Underutilized",
			candidates: func() []*disruption.Candidate {
				whenEmpty, balanced := pool("whenempty"), pool("balanced")
				whenEmpty.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
				balanced.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
				twoUnder := pool("twounder", v1.Budget{Nodes: "100%"}, v1.Budget{Nodes: "2", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized}})
				return []*disruption.Candidate{candidate("a", all, 1, v1.ConditionTypeConsolidatable), candidate("b", all, 1),
					candidate("c", whenEmpty, 1, v1.ConditionTypeConsolidatable), candidate("d", balanced, 1, v1.ConditionTypeConsolidatable),
					candidate("e", twoUnder, 1, v1.ConditionTypeConsolidatable), candidate("f", twoUnder, 2, v1.ConditionTypeConsolidatable),
					candidate("g", twoUnder, 3, v1.ConditionTypeConsolidatable)}
			}, wantUnder: []string{"a", "d", "e", "f"}, wantBlocked: map[string]string{"g": disruption.BlockedBudget}},
		{name: "underutilized: the budget goes to the nodes with the fewest pods",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", one, 3, v1.ConditionTypeConsolidatable), candidate("b", one, 1, v1.ConditionTypeConsolidatable)}
			}, wantUnder: []string{"b"}, wantBlocked: map[string]string{"a": disruption.BlockedBudget}},
		{name: "drift before consolidation: it takes the budget",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", one, 1, v1.ConditionTypeConsolidatable), candidate("b", one, 1, v1.ConditionTypeDrifted)}
			}, wantDrifted: []string{"b"}, wantBlocked: map[string]string{"a": disruption.BlockedBudget}},
		{name: "a budget of one takes one, the next is told",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", one, 0, v1.ConditionTypeConsolidatable), candidate("b", one, 0, v1.ConditionTypeConsolidatable)}
			}, wantEmpty: []string{"a"}, wantBlocked: map[string]string{"b": disruption.BlockedBudget}},
		{name: "a node already disrupting takes the budget",
			candidates: func() []*disruption.Candidate {
				going := candidate("a", one, 0, v1.ConditionTypeConsolidatable)
				going.Disrupting = true
				return []*disruption.Candidate{going, candidate("b", one, 1, v1.ConditionTypeDrifted)}
			}, wantBlocked: map[string]string{"b": disruption.BlockedBudget}},
		{name: "a percentage is of the initialized nodes: a replacement launching does not raise its round-up",
			candidates: func() []*disruption.Candidate {
				tenth := pool("tenth", v1.Budget{Nodes: "10%"})
				var out []*disruption.Candidate
				for i := range 9 {
					out = append(out, candidate(fmt.Sprintf("n%d", i), tenth, 1))
				}
				out[0].Disrupting = true
				replacement := candidate("replacement", tenth, 0)
				replacement.NodeClaim.Status.Conditions[0].Status = metav1.ConditionFalse
				replacement.Node = nil
				return append(out, replacement, candidate("empty", tenth, 0, v1.ConditionTypeConsolidatable))
			}, wantBlocked: map[string]string{"empty": disruption.BlockedBudget}},
		{name: "a node not Ready takes the budget",
			candidates: func() []*disruption.Candidate {
				down := candidate("a", one, 1)
				down.Node.Status.Conditions[0].Status = corev1.ConditionUnknown
				return []*disruption.Candidate{down, candidate("b", one, 0, v1.ConditionTypeConsolidatable)}
			}, wantBlocked: map[string]string{"b": disruption.BlockedBudget}},
		{name: "emptiness first: it takes the budget drift wanted",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", one, 1, v1.ConditionTypeDrifted), candidate("b", one, 0, v1.ConditionTypeConsolidatable)}
			}, wantEmpty: []string{"b"}, wantBlocked: map[string]string{"a": disruption.BlockedBudget}},
		{name: "an empty drifted node goes once, by emptiness",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", all, 0, v1.ConditionTypeDrifted, v1.ConditionTypeConsolidatable)}
			}, wantEmpty: []string{"a"}},
		{name: "a budget for drift only",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", noDrift, 1, v1.ConditionTypeDrifted), candidate("b", noDrift, 0, v1.ConditionTypeConsolidatable)}
			}, wantEmpty: []string{"b"}, wantBlocked: map[string]string{"a": disruption.BlockedBudget}},
		{name: "budgets are per NodePool",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", one, 1, v1.ConditionTypeDrifted), candidate("b", all, 1, v1.ConditionTypeDrifted), candidate("c", all, 1, v1.ConditionTypeDrifted)}
			}, wantDrifted: []string{"a", "b", "c"}},
		{name: "do-not-disrupt on the node",
			candidates: func() []*disruption.Candidate {
				c := candidate("a", all, 1, v1.ConditionTypeDrifted)
				c.Node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
				return []*disruption.Candidate{c}
			}, wantBlocked: map[string]string{"a": disruption.BlockedDoNotDisruptNode}},
		{name: "do-not-disrupt on a pod",
			candidates: func() []*disruption.Candidate {
				c := candidate("a", all, 2, v1.ConditionTypeDrifted)
				c.Pods[1].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
				return []*disruption.Candidate{c}
			}, wantBlocked: map[string]string{"a": disruption.BlockedDoNotDisruptPod}},
		// A review against upstream: a DaemonSet's or a mirror pod's annotation held nothing.
		{name: "do-not-disrupt on a DaemonSet's pod",
			candidates: func() []*disruption.Candidate {
				c := candidate("a", all, 0, v1.ConditionTypeDrifted, v1.ConditionTypeConsolidatable)
				c.Resident = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: "true"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}}}}
				return []*disruption.Candidate{c}
			}, wantBlocked: map[string]string{"a": disruption.BlockedDoNotDisruptPod}},
		{name: "a terminationGracePeriod lets drift past a do-not-disrupt pod and a PodDisruptionBudget, not past a do-not-disrupt node nor underutilized",
			candidates: func() []*disruption.Candidate {
				grace := &metav1.Duration{Duration: time.Hour}
				pod := candidate("a", all, 2, v1.ConditionTypeDrifted)
				pod.Pods[1].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
				budgeted := candidate("b", all, 1, v1.ConditionTypeDrifted)
				node := candidate("c", all, 1, v1.ConditionTypeDrifted)
				node.Node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
				under := candidate("d", all, 1, v1.ConditionTypeConsolidatable)
				under.Pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
				for _, c := range []*disruption.Candidate{pod, budgeted, node, under} {
					c.NodeClaim.Spec.TerminationGracePeriod = grace
				}
				budgeted.Pods[0].Labels = map[string]string{"app": "guarded"}
				return []*disruption.Candidate{pod, budgeted, node, under}
			},
			pdbs: []policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
				Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}},
			wantDrifted: []string{"a", "b"},
			wantBlocked: map[string]string{"c": disruption.BlockedDoNotDisruptNode, "d": disruption.BlockedDoNotDisruptPod}},
		{name: "an unreadable do-not-disrupt holds nothing",
			candidates: func() []*disruption.Candidate {
				c := candidate("a", all, 1, v1.ConditionTypeDrifted)
				c.Pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "always"}
				return []*disruption.Candidate{c}
			}, wantDrifted: []string{"a"}},
		{name: "a PodDisruptionBudget allowing nothing",
			candidates: func() []*disruption.Candidate {
				return []*disruption.Candidate{candidate("a", all, 1, v1.ConditionTypeDrifted)}
			},
			pdbs: []policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
				Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}}}},
			wantBlocked: map[string]string{"a": disruption.BlockedPDB}},
		{name: "not initialized",
			candidates: func() []*disruption.Candidate {
				c := candidate("a", all, 1, v1.ConditionTypeDrifted)
				c.NodeClaim.Status.Conditions[0].Status = metav1.ConditionFalse
				return []*disruption.Candidate{c}
			}, wantBlocked: map[string]string{"a": disruption.BlockedNotInitialized}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			candidates := tc.candidates()
			d := disruption.Decide(candidates, blockers(tc.pdbs...), decideNow)
			if got := names(d.Empty); !slices.Equal(got, tc.wantEmpty) {
				t.Errorf("empty %v, want %v", got, tc.wantEmpty)
			}
			if got := names(d.Drifted); !slices.Equal(got, tc.wantDrifted) {
				t.Errorf("drifted %v, want %v", got, tc.wantDrifted)
			}
			if got := names(d.Underutilized); !slices.Equal(got, tc.wantUnder) {
				t.Errorf("underutilized %v, want %v", got, tc.wantUnder)
			}
			got := map[string]string{}
			for name, why := range d.Blocked {
				got[name] = why.Reason
			}
			if len(got) != len(tc.wantBlocked) {
				t.Errorf("blocked %v, want %v", got, tc.wantBlocked)
			}
			for name, reason := range tc.wantBlocked {
				if got[name] != reason {
					t.Errorf("blocked %v, want %v", got, tc.wantBlocked)
				}
			}
		})
	}
}

// TestDecideReportsUnreadableBudgets: a budget that cannot be read allows nothing, and Decide
// says which NodePool's, for the controller to tell it.
func TestDecideReportsUnreadableBudgets(t *testing.T) {
	zone, schedule := "Mars/Olympus", "@daily"
	np := pool("mars", v1.Budget{Nodes: "100%"}, v1.Budget{Nodes: "100%", Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: &zone})
	candidates := []*disruption.Candidate{candidate("a", np, 0, v1.ConditionTypeConsolidatable)}
	d := disruption.Decide(candidates, blockers(), decideNow)
	if len(d.Empty) != 0 || d.BudgetErrors["mars"] == nil || d.Blocked["a"].Reason != disruption.BlockedBudget {
		t.Errorf("empty %v, budget errors %v, blocked %v; want nothing taken, the error reported, a blocked by its budget", names(d.Empty), d.BudgetErrors, d.Blocked)
	}
}
