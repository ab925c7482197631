package nodeclaims_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
)

func nodeClaim() *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "nc-uid", Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", "team": "ml"}},
		Spec: v1.NodeClaimSpec{
			Taints:        []v1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []v1.Taint{{Key: "cni.example.com/not-ready", Effect: corev1.TaintEffectNoSchedule}},
			Resources:     v1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("2")}},
		},
	}
}

func TestRegister(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", Labels: map[string]string{corev1.LabelHostname: "ip-10-0-0-1"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			nodeclaims.UnregisteredTaint,
			{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		}},
	}
	registered := nodeclaims.Register(nodeClaim(), node)
	if len(node.Spec.Taints) != 3 || len(node.Finalizers) != 0 {
		t.Errorf("Register changed the node it was given: %+v", node)
	}
	want := map[string]string{corev1.LabelHostname: "ip-10-0-0-1", v1alpha5.ProvisionerNameLabelKey: "default", "team": "ml", v1.NodeRegisteredLabelKey: "true"}
	for k, v := range want {
		if registered.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, registered.Labels[k], v)
		}
	}
	var keys []string
	for _, taint := range registered.Spec.Taints {
		keys = append(keys, taint.Key)
	}
	if got := len(keys); got != 3 || keys[0] != "dedicated" || keys[1] != corev1.TaintNodeNotReady || keys[2] != "cni.example.com/not-ready" {
		t.Errorf("taints %v, want the node's own (unregistered gone) then the startup taint, the NodeClaim's taint once", keys)
	}
	if len(registered.Finalizers) != 1 || registered.Finalizers[0] != v1.TerminationFinalizer {
		t.Errorf("finalizers %v, want %s", registered.Finalizers, v1.TerminationFinalizer)
	}
	if refs := registered.OwnerReferences; len(refs) != 1 || refs[0].Kind != "NodeClaim" || refs[0].UID != "nc-uid" || refs[0].APIVersion != "karpenter.sh/v1" {
		t.Errorf("owner references %+v, want the NodeClaim", refs)
	}
	// Registering twice changes nothing more.
	again := nodeclaims.Register(nodeClaim(), registered)
	if len(again.Spec.Taints) != 3 || len(again.Finalizers) != 1 || len(again.OwnerReferences) != 1 {
		t.Errorf("registering again changed the node: %+v", again)
	}
}

func TestInitialized(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	withGPU := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("4")}
	for _, tc := range []struct {
		name       string
		taints     []corev1.Taint
		conditions []corev1.NodeCondition
		allocated  corev1.ResourceList
		reason     string
	}{
		{name: "not ready", allocated: withGPU, reason: nodeclaims.ReasonNodeNotReady},
		{name: "ready with karpenter's not-ready taint", conditions: ready, allocated: withGPU,
			taints: []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}, reason: nodeclaims.ReasonNodeNotReady},
		{name: "ready but unregistered", conditions: ready, allocated: withGPU, taints: []corev1.Taint{nodeclaims.UnregisteredTaint}, reason: nodeclaims.ReasonNodeNotReady},
		{name: "startup taint left", conditions: ready, allocated: withGPU,
			taints: []corev1.Taint{{Key: "cni.example.com/not-ready", Effect: corev1.TaintEffectNoSchedule}}, reason: nodeclaims.ReasonStartupTaintsExist},
		{name: "ready, the cloud controller manager not done", conditions: ready, allocated: withGPU,
			taints: []corev1.Taint{{Key: nodes.CloudProviderUninitializedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}, reason: nodeclaims.ReasonNodeNotReady},
		{name: "ready, the Node Readiness Controller's taint on", conditions: ready, allocated: withGPU,
			taints: []corev1.Taint{{Key: "readiness.k8s.io/NetworkReady", Value: "pending", Effect: corev1.TaintEffectNoSchedule}}, reason: nodeclaims.ReasonNodeNotReady},
		{name: "the GPU not allocatable yet", conditions: ready, allocated: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, reason: nodeclaims.ReasonResourceNotRegistered},
		{name: "initialized", conditions: ready, allocated: withGPU,
			taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: tc.taints},
				Status: corev1.NodeStatus{Conditions: tc.conditions, Allocatable: tc.allocated}}
			ok, reason, message := nodeclaims.Initialized(nodeClaim(), node)
			if ok != (tc.reason == "") || reason != tc.reason {
				t.Errorf("Initialized = %v, %q (%s), want reason %q", ok, reason, message, tc.reason)
			}
		})
	}
}
