// Package pools names the pools Karpenter launches nodes for: v1alpha5 Provisioners and v1
// NodePools. Both kinds live side by side and may share a name, so a pool is its kind and its
// name, read from the label every node and NodeClaim of the pool carries. Every loop keyed by
// pool (limits, launches, metrics, disruption) keys by Key.
package pools

import (
	"cmp"
	"fmt"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// Key identifies a pool: LabelKey is the label its nodes carry Name under,
// karpenter.sh/provisioner-name for a Provisioner and karpenter.sh/nodepool for a NodePool.
type Key struct {
	LabelKey string
	Name     string
}

// Provisioner is the key of the Provisioner named name.
func Provisioner(name string) Key {
	return Key{LabelKey: v1alpha5.ProvisionerNameLabelKey, Name: name}
}

// NodePool is the key of the NodePool named name.
func NodePool(name string) Key {
	return Key{LabelKey: v1.NodePoolLabelKey, Name: name}
}

// IsNodePool is whether the pool is a v1 NodePool.
func (k Key) IsNodePool() bool {
	return k.LabelKey == v1.NodePoolLabelKey
}

// Kind is the pool's API kind, as messages and Events name it.
func (k Key) Kind() string {
	if k.IsNodePool() {
		return "NodePool"
	}
	return "Provisioner"
}

// Compare orders keys by name, then kind: the order pools are listed and planned in.
func Compare(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.LabelKey, b.LabelKey))
}

// String names the pool in messages: `nodepool "default"`, `provisioner "default"`.
func (k Key) String() string {
	if k.IsNodePool() {
		return fmt.Sprintf("nodepool %q", k.Name)
	}
	return fmt.Sprintf("provisioner %q", k.Name)
}

// ProvisionerOf is the name of the Provisioner a node or NodeClaim with these labels was
// launched for; false for a NodePool's or one Karpenter did not launch. The v1alpha5 loops
// (ttlSecondsAfterEmpty, hydration, the Provisioners' consolidation) act on those alone.
func ProvisionerOf(labels map[string]string) (string, bool) {
	key, ok := Of(labels)
	if !ok || key.IsNodePool() {
		return "", false
	}
	return key.Name, true
}

// Of is the pool a node or NodeClaim with these labels was launched for; false for one
// Karpenter did not launch. A NodePool's label wins should both be present.
func Of(labels map[string]string) (Key, bool) {
	if name, ok := labels[v1.NodePoolLabelKey]; ok {
		return NodePool(name), true
	}
	if name, ok := labels[v1alpha5.ProvisionerNameLabelKey]; ok {
		return Provisioner(name), true
	}
	return Key{}, false
}
