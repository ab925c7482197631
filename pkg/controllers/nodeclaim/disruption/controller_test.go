package disruption_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/disruption"
	pkgdisruption "karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// TestConditions: a NodeClaim launched from a NodePool is Consolidatable once consolidateAfter
// passed since it was initialized, and Drifted once the NodePool's template changes; a NodeClaim
// stamped by another hash version is stamped again, not drifted.
func TestConditions(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
		NodeClaimTemplateObjectMeta: v1.NodeClaimTemplateObjectMeta{Labels: map[string]v1.LabelValue{"team": "a"}},
		Spec:                        v1.NodeClaimTemplateSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
	}, Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("30s")}}}
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{Role: "role"}}
	stamped := func(version string) *v1.NodeClaim {
		return &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "default-" + version, Labels: map[string]string{v1.NodePoolLabelKey: "default"}, Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey: "stale", v1.NodePoolHashVersionAnnotationKey: version}},
			Spec: v1.NodeClaimSpec{NodeClassRef: np.Spec.Template.Spec.NodeClassRef},
			Status: v1.NodeClaimStatus{Conditions: []metav1.Condition{
				{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.NewTime(start)},
				{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(start)},
			}},
		}
	}
	current := stamped(pkgdisruption.HashVersion)
	current.Annotations[v1.NodePoolHashAnnotationKey] = pkgdisruption.NodePoolHash(np)
	upstream := stamped("v3")
	c := kubefake.NewClientBuilder().WithObjects(np, class, current, upstream).Build()
	controller, err := disruption.New(disruption.Options{Client: c, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	reconcileAll := func() {
		t.Helper()
		for _, name := range []string{current.Name, upstream.Name} {
			if _, err := controller.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(name string) *v1.NodeClaim {
		t.Helper()
		nc := &v1.NodeClaim{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		return nc
	}

	reconcileAll()
	for _, name := range []string{current.Name, upstream.Name} {
		nc := read(name)
		if nc.Condition(v1.ConditionTypeDrifted) != nil || nc.Condition(v1.ConditionTypeConsolidatable) != nil {
			t.Errorf("nodeclaim %s: %+v, want neither Drifted nor yet Consolidatable", name, nc.Status.Conditions)
		}
		if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != pkgdisruption.HashVersion || nc.Annotations[v1.NodePoolHashAnnotationKey] != pkgdisruption.NodePoolHash(np) {
			t.Errorf("nodeclaim %s annotated %v, want today's hash", name, nc.Annotations)
		}
	}

	clock.Step(30 * time.Second)
	reconcileAll()
	if nc := read(current.Name); !nc.IsTrue(v1.ConditionTypeConsolidatable) {
		t.Errorf("30s after initialization: %+v, want Consolidatable", nc.Status.Conditions)
	}

	stored := np.DeepCopy()
	np.Spec.Template.Labels["team"] = "b"
	if err := c.Patch(t.Context(), np, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	reconcileAll()
	for _, name := range []string{current.Name, upstream.Name} {
		if drifted := read(name).Condition(v1.ConditionTypeDrifted); drifted == nil || drifted.Reason != pkgdisruption.ReasonNodePoolDrifted {
			t.Errorf("nodeclaim %s after the template changed: Drifted %+v, want %s", name, drifted, pkgdisruption.ReasonNodePoolDrifted)
		}
	}
}

// TestInstanceTypeGone: a NodeClaim whose instance type the cloud no longer offers to its class
// drifts with InstanceTypeNotFound; one still offered does not, nor does any while the cloud's
// instance types cannot be read.
func TestInstanceTypeGone(t *testing.T) {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
		Spec: v1.NodeClaimTemplateSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
	}}}
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{Role: "role"}}
	claim := func(instanceType string) *v1.NodeClaim {
		return &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "default-" + strings.ReplaceAll(instanceType, ".", "-"),
				Labels: map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: instanceType}},
			Spec: v1.NodeClaimSpec{NodeClassRef: np.Spec.Template.Spec.NodeClassRef},
			Status: v1.NodeClaimStatus{Conditions: []metav1.Condition{
				{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"}}},
		}
	}
	offered, retired := claim(fake.DefaultInstanceTypes()[0].Name), claim("m1.retired")
	for _, tc := range []struct {
		name                string
		catalogueErr        error
		offeredReason, gone string
	}{
		{name: "the catalogue read", gone: pkgdisruption.ReasonInstanceTypeNotFound},
		{name: "the catalogue not read yet", catalogueErr: errors.New("no instance types read yet")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubefake.NewClientBuilder().WithObjects(np, class, offered.DeepCopy(), retired.DeepCopy()).Build()
			cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
			cloud.SetError(tc.catalogueErr)
			controller, err := disruption.New(disruption.Options{Client: c, Clock: clocktesting.NewFakeClock(time.Now()), Instances: cloud})
			if err != nil {
				t.Fatal(err)
			}
			// Twice each, as pod events would: the cloud is asked once per type within the recheck.
			for range 2 {
				for _, nc := range []*v1.NodeClaim{offered, retired} {
					if _, err := controller.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if calls := len(cloud.InstanceTypesCalls()); tc.catalogueErr == nil && calls != 2 {
				t.Errorf("%d instance type listings, want 2 (one per type)", calls)
			}
			for nc, want := range map[*v1.NodeClaim]string{offered: tc.offeredReason, retired: tc.gone} {
				stored := &v1.NodeClaim{}
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(nc), stored); err != nil {
					t.Fatal(err)
				}
				got := ""
				if drifted := stored.Condition(v1.ConditionTypeDrifted); drifted != nil {
					got = drifted.Reason
				}
				if got != want {
					t.Errorf("nodeclaim %s: Drifted %q, want %q", nc.Name, got, want)
				}
			}
		})
	}
}
