package disruption_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	pkgdisruption "karpenter.sh/karpenter/pkg/disruption"
)

// interruptedFleet is underutilizedFleet's node under consolidationPolicy WhenEmpty, a budget of
// no node at all and its pod annotated do-not-disrupt — nothing voluntary may touch it — with a
// scheduled change recorded on its NodeClaim, starting in.
func interruptedFleet(h time.Time, in time.Duration) []client.Object {
	objects := underutilizedFleet("10%")
	np := objects[0].(*v1.NodePool)
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
	objects[2].SetAnnotations(pkgdisruption.Interruption{Reason: "scheduled_change", Deadline: h.Add(in)}.Annotations())
	objects[4].SetAnnotations(map[string]string{v1.DoNotDisruptAnnotationKey: "true"})
	return objects
}

// TestAnInterruptedNodeIsReplacedFirst: a node whose instance a scheduled change takes away in
// two weeks is tainted and replaced at once, whatever its budget and do-not-disrupt say, and
// deleted once its replacement is initialized; one the change is nearer than a drain to is
// deleted at once; one whose replacement is not initialized by then is deleted all the same.
func TestAnInterruptedNodeIsReplacedFirst(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) // the harness's clock
	initialize := func(t *testing.T, h *harness) {
		var list v1.NodeClaimList
		if err := h.client.List(t.Context(), &list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			nc := &list.Items[i]
			if nc.Annotations[v1alpha5.ReplacesAnnotationKey] == "" {
				continue
			}
			if nc.Annotations[v1.DisruptionReasonAnnotationKey] != "scheduled_change" {
				t.Errorf("replacement annotated %v, want reason scheduled_change", nc.Annotations)
			}
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue,
				Reason: "Initialized", LastTransitionTime: metav1.Now()})
			if err := h.client.Status().Update(t.Context(), nc); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		in   time.Duration
		// initialized marks the replacements initialized after the first pass; step is how far
		// the clock moves after each pass.
		initialized  bool
		step         time.Duration
		wantLaunches int
		// wantKeptAfterFirst is whether the node is still there, tainted, after the first pass.
		wantKeptAfterFirst bool
	}{
		{name: "replaced, then deleted once its replacement is initialized", in: 14 * 24 * time.Hour, initialized: true, wantLaunches: 1, wantKeptAfterFirst: true},
		{name: "nearer than a drain: deleted at once", in: 5 * time.Minute},
		{name: "its replacement not initialized by its drain: deleted all the same", in: 14 * 24 * time.Hour, step: 14 * 24 * time.Hour, wantLaunches: 1, wantKeptAfterFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, interruptedFleet(start, tc.in)...)
			h.passes(t, 1, tc.step)
			node := &corev1.Node{}
			if err := h.client.Get(t.Context(), client.ObjectKey{Name: "big"}, node); err != nil {
				t.Fatal(err)
			}
			tainted := slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == v1.DisruptedTaintKey })
			err := h.client.Get(t.Context(), client.ObjectKey{Name: "default-big"}, &v1.NodeClaim{})
			if kept := err == nil; kept != tc.wantKeptAfterFirst || !tainted {
				t.Errorf("after the first pass: nodeclaim kept %v (%v), node tainted %v; want kept %v, tainted", kept, err, tainted, tc.wantKeptAfterFirst)
			}
			if tc.initialized {
				initialize(t, h)
			}
			h.passes(t, 1, 0)
			if err := h.client.Get(t.Context(), client.ObjectKey{Name: "default-big"}, &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
				t.Errorf("nodeclaim: %v, want it deleted", err)
			}
			if launched := len(h.cloud.CreateCalls()); launched != tc.wantLaunches {
				t.Errorf("%d launches, want %d", launched, tc.wantLaunches)
			}
			if deleted := countOf(h.reasons(), disruption.ReasonDisrupting); deleted != 2 {
				t.Errorf("told %d times it is disrupted, want once on the NodeClaim and once on the node", deleted)
			}
		})
	}
}
