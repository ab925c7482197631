package nodes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions []corev1.NodeCondition
		status     corev1.ConditionStatus
		ready      bool
	}{
		{"no conditions yet", nil, corev1.ConditionUnknown, false},
		{"ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, corev1.ConditionTrue, true},
		{"not ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}, corev1.ConditionFalse, false},
		{"kubelet stopped reporting", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}, corev1.ConditionUnknown, false},
		{"other conditions only", []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}, corev1.ConditionUnknown, false},
		{"ready among others", []corev1.NodeCondition{
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		}, corev1.ConditionTrue, true},
	} {
		node := &corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conditions}}
		if got := ReadyStatus(node); got != tc.status {
			t.Errorf("%s: ReadyStatus = %q, want %q", tc.name, got, tc.status)
		}
		if got := IsReady(node); got != tc.ready {
			t.Errorf("%s: IsReady = %v, want %v", tc.name, got, tc.ready)
		}
	}
}

func TestIsLaunchedByKarpenter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"no labels", nil, false},
		{"other labels", map[string]string{corev1.LabelHostname: "n1"}, false},
		{"provisioner-name label", map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}, true},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
		if got := IsLaunchedByKarpenter(node); got != tc.want {
			t.Errorf("%s: IsLaunchedByKarpenter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsSetupTaint(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{CloudProviderUninitializedTaintKey, true},
		{"readiness.k8s.io/NetworkReady", true},
		{"example.com/readiness.k8s.io", false},
		{corev1.TaintNodeNotReady, false},
		{"dedicated", false},
	} {
		if got := IsSetupTaint(corev1.Taint{Key: tc.key, Effect: corev1.TaintEffectNoSchedule}); got != tc.want {
			t.Errorf("IsSetupTaint(%s) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestIsInitialized(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"not Karpenter's", nil, true},
		{"Karpenter's, not initialized yet", map[string]string{v1.NodePoolLabelKey: "default", v1.NodeRegisteredLabelKey: "true"}, false},
		{"Karpenter's, initialized", map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", v1.NodeInitializedLabelKey: "true"}, true},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
		if got := IsInitialized(node); got != tc.want {
			t.Errorf("%s: IsInitialized = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsRemovable(t *testing.T) {
	launched := map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}
	finalized := []string{"other", v1alpha5.TerminationFinalizer}
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		finalizers []string
		deleting   bool
		want       bool
	}{
		{name: "launched by Karpenter, with the termination finalizer", labels: launched, finalizers: finalized, want: true},
		{name: "without the termination finalizer", labels: launched, finalizers: []string{"other"}},
		{name: "without finalizers", labels: launched},
		{name: "being deleted", labels: launched, finalizers: finalized, deleting: true},
		{name: "not launched by Karpenter", finalizers: finalized},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Finalizers: tc.finalizers}}
		if tc.deleting {
			node.DeletionTimestamp = &metav1.Time{}
		}
		if got := IsRemovable(node); got != tc.want {
			t.Errorf("%s: IsRemovable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsLaunching(t *testing.T) {
	notReady := corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name   string
		taints []corev1.Taint
		want   bool
	}{
		{"no taint", nil, false},
		{"other taints", []corev1.Taint{other}, false},
		{"the not-ready taint among others", []corev1.Taint{other, notReady}, true},
	} {
		if got := IsLaunching(&corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}}); got != tc.want {
			t.Errorf("%s: IsLaunching = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHasConditionTaint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		taints []corev1.Taint
		want   bool
	}{
		{"no taints", nil, false},
		{"not ready", []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, true},
		{"unreachable", []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}, true},
		{"karpenter's own not-ready taint is not the lifecycle controller's", []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}, false},
	} {
		if got := HasConditionTaint(&corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}}); got != tc.want {
			t.Errorf("%s: HasConditionTaint = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAwaitsItsPods(t *testing.T) {
	notReady := corev1.Taint{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}
	lifecycle := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name   string
		ready  corev1.ConditionStatus
		taints []corev1.Taint
		want   bool
	}{
		{"launching", corev1.ConditionUnknown, []corev1.Taint{notReady}, true},
		{"ready, lifecycle taint not lifted yet", corev1.ConditionTrue, []corev1.Taint{lifecycle}, true},
		{"ready and open", corev1.ConditionTrue, nil, false},
		{"failed since", corev1.ConditionFalse, []corev1.Taint{lifecycle}, false},
		{"never reported", corev1.ConditionUnknown, []corev1.Taint{lifecycle}, false},
	} {
		node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: tc.ready}}}}
		if got := AwaitsItsPods(node); got != tc.want {
			t.Errorf("%s: AwaitsItsPods = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsDisrupted(t *testing.T) {
	tainted := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnschedulable}, {Key: v1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}}}
	if !IsDisrupted(tainted) || IsDisrupted(&corev1.Node{}) {
		t.Errorf("a node tainted %s is disrupted, one without is not", v1.DisruptedTaintKey)
	}
}
