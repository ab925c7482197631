package amifamily_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/providers/amifamily"
)

func TestUserDataIsStableAndQuotesNothing(t *testing.T) {
	in := amifamily.NodeBootstrap{
		ClusterName: "demo", ClusterEndpoint: "https://e", ServiceCIDR: "10.100.0.0/16", MaxPods: 29,
		Labels: map[string]string{"team": "ml", "karpenter.sh/provisioner-name": "default"},
		Taints: []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}, {Key: "it's", Effect: corev1.TaintEffectNoExecute}},
	}
	first, err := amifamily.UserData(in)
	if err != nil {
		t.Fatal(err)
	}
	// Equal inputs must render equal bytes, or every launch would make a new template.
	for range 10 {
		if again, _ := amifamily.UserData(in); again != first {
			t.Fatalf("user data differs between renders:\n%s\n%s", first, again)
		}
	}
	// nodeadm passes flags to the kubelet as they are: no shell quoting to undo.
	// The node registers with the unregistered taint, which Karpenter lifts once it has synced
	// the node's NodeClaim onto it.
	if want := `--register-with-taints=gpu=true:NoSchedule,it's:NoExecute,karpenter.sh/unregistered:NoExecute`; !strings.Contains(first, want) {
		t.Errorf("user data lacks %q:\n%s", want, first)
	}
	plain, _ := amifamily.UserData(amifamily.NodeBootstrap{ClusterName: "demo"})
	if strings.Contains(plain, "--node-labels") || !strings.Contains(plain, "--register-with-taints=karpenter.sh/unregistered:NoExecute") {
		t.Errorf("user data without labels or taints passes other flags than the unregistered taint:\n%s", plain)
	}
}
