package nodeoverlay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/nodeoverlay"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/nodeclasses"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestNodeOverlays on a real apiserver, with the NodeOverlay feature gate on: an overlay that
// makes the dearest instance type that fits a pending pod the cheapest makes the provisioning
// pass launch it first, and the nodeoverlay controller marks it Ready and an overlay that
// matches nothing not Ready, with a Warning Event; an overlay that only a NodePool's instance
// types match is Ready too.
func TestNodeOverlays(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	onDemand := []v1alpha5.NodeSelectorRequirement{{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}}}
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Requirements: onDemand})
	types, err := cloud.InstanceTypes(ctx, provisioning.Constraints(p))
	if err != nil || len(types) < 2 {
		t.Fatalf("the fake cloud offers %d instance types (%v), want several", len(types), err)
	}
	dearest := types[0]
	for _, it := range types {
		if price(it) > price(dearest) {
			dearest = it
		}
	}
	discount := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "discount"}, Spec: v1alpha1.NodeOverlaySpec{
		Requirements: []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{dearest.Name}}},
		Price:        ptr.To("0.001"),
	}}
	nowhere := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}, Spec: v1alpha1.NodeOverlaySpec{
		Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"no-such-type"}}},
		PriceAdjustment: ptr.To("-10%"),
		Weight:          ptr.To[int32](3),
	}}
	// Only a NodePool's nodes carry team=v1: the overlay applies through its instance types.
	nodeclasses.Ready(t, env.Client, "default")
	nodePool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "v1"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
		NodeClaimTemplateObjectMeta: v1.NodeClaimTemplateObjectMeta{Labels: map[string]v1.LabelValue{"team": "v1"}},
		Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}}}
	nodePoolOnly := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "nodepool-only"}, Spec: v1alpha1.NodeOverlaySpec{
		Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"v1"}}},
		PriceAdjustment: ptr.To("-5%"),
		Weight:          ptr.To[int32](5),
	}}
	for _, o := range []client.Object{p, discount, nowhere, nodePool, nodePoolOnly} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s, %v", o.GetName(), err)
		}
	}
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:           []string{provisioning.Name, nodeoverlay.Name},
		NodeOverlay:       true,
		CloudProvider:     cloudprovider.NewRegistry(),
		InstanceProvider:  cloud,
		BatchIdleDuration: 200 * time.Millisecond,
		BatchMaxDuration:  2 * time.Second,
	}})

	ready := func(name string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		eventually.Holds(t, fmt.Sprintf("NodeOverlay %s Ready %s %s", name, status, reason), func() (bool, string, error) {
			var o v1alpha1.NodeOverlay
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &o); err != nil {
				return false, "", err
			}
			c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
			return c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("%+v", o.Status.Conditions), nil
		})
	}
	ready("discount", metav1.ConditionTrue, v1alpha1.ConditionTypeReady)
	ready("nowhere", metav1.ConditionFalse, nodeoverlay.ReasonNoMatch)
	ready("nodepool-only", metav1.ConditionTrue, v1alpha1.ConditionTypeReady)
	eventually.Holds(t, "a Warning Event says nowhere matches nothing", func() (bool, string, error) {
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false, "", err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "nowhere" && e.Type == corev1.EventTypeWarning && e.Reason == nodeoverlay.ReasonNoMatch {
				return true, e.Message, nil
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items)), nil
	})

	pod := builders.Pod(builders.PodOptions{Name: "web", Requests: builders.Resources("cpu", "100m")})
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	unschedulable(ctx, t, env.Client, pod)
	eventually.Holds(t, fmt.Sprintf("a launch of %s at the overlay's price first", dearest.Name), func() (bool, string, error) {
		calls := cloud.CreateCalls()
		if len(calls) == 0 {
			return false, "no launch yet", nil
		}
		first := calls[0].Candidates[0]
		return first.InstanceType.Name == dearest.Name && first.Offering.Price == 0.001, fmt.Sprintf("first candidate %s at %g", first.InstanceType.Name, first.Offering.Price), nil
	})
}

// unschedulable marks the pod as kube-scheduler marks one it finds no node for, which is what
// the provisioning pass acts on.
func unschedulable(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod) {
	t.Helper()
	stored := pod.DeepCopy()
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Patch(ctx, pod, client.MergeFrom(stored)); err != nil {
		t.Fatalf("marking pod %s unschedulable, %v", pod.Name, err)
	}
}

func price(it *cloudprovider.InstanceType) float64 {
	cheapest := 0.0
	for _, o := range it.Offerings {
		if o.CapacityType == v1alpha5.CapacityTypeOnDemand && (cheapest == 0 || o.Price < cheapest) {
			cheapest = o.Price
		}
	}
	return cheapest
}
