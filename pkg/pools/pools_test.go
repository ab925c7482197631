package pools_test

import (
	"testing"

	"karpenter.sh/karpenter/pkg/pools"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   pools.Key
		ok     bool
	}{
		{"a Provisioner's node", map[string]string{"karpenter.sh/provisioner-name": "default"}, pools.Provisioner("default"), true},
		{"a NodePool's node", map[string]string{"karpenter.sh/nodepool": "default"}, pools.NodePool("default"), true},
		{"both labels: the NodePool's", map[string]string{"karpenter.sh/nodepool": "a", "karpenter.sh/provisioner-name": "b"}, pools.NodePool("a"), true},
		{"not Karpenter's", map[string]string{"kubernetes.io/os": "linux"}, pools.Key{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pools.Of(tc.labels)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Of(%v) = %v, %v; want %v, %v", tc.labels, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSameNameDifferentKindsDiffer(t *testing.T) {
	if pools.Provisioner("default") == pools.NodePool("default") {
		t.Fatal("a Provisioner and a NodePool of one name are one pool")
	}
	if got := pools.NodePool("default").String(); got != `nodepool "default"` {
		t.Errorf("String() = %s", got)
	}
}
