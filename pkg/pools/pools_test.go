package pools_test

import (
	"slices"
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

func TestProvisionerOf(t *testing.T) {
	for labels, want := range map[string]bool{"karpenter.sh/provisioner-name": true, "karpenter.sh/nodepool": false, "kubernetes.io/os": false} {
		name, ok := pools.ProvisionerOf(map[string]string{labels: "default"})
		if ok != want || (ok && name != "default") {
			t.Errorf("ProvisionerOf(%s=default) = %q, %t; want %t", labels, name, ok, want)
		}
	}
}

func TestCompare(t *testing.T) {
	keys := []pools.Key{pools.Provisioner("b"), pools.Provisioner("a"), pools.NodePool("a")}
	slices.SortFunc(keys, pools.Compare)
	if want := []pools.Key{pools.NodePool("a"), pools.Provisioner("a"), pools.Provisioner("b")}; !slices.Equal(keys, want) {
		t.Errorf("sorted %v, want %v", keys, want)
	}
}
