package scheduling

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
)

// Pool is what may launch new nodes, a v1alpha5 Provisioner or a v1 NodePool, as the scheduler
// reads it, with the instance types its cloud provider offers for it.
type Pool struct {
	Key pools.Key
	// Labels are set on every node of the pool; the pool's own label (Key) is added to them.
	Labels map[string]string
	// Requirements are what every node's labels must satisfy.
	Requirements []corev1.NodeSelectorRequirement
	// Taints are on every node; pods must tolerate them.
	Taints []corev1.Taint
	// Weight orders the pools a pod could go to: the highest-weighted that can take it does,
	// at the price of its cheapest fitting node; among equal weights the cheapest node wins.
	Weight int32
	// Limits bound the capacities of the pool's nodes, summed, and as v1.LimitNodes their
	// number; Used is what counts against them already. Nil Limits: no bound.
	Limits, Used  corev1.ResourceList
	InstanceTypes []*cloudprovider.InstanceType
	// MinValues are, per requirement key, how many distinct values of it every node's instance
	// types must keep between them (a NodePool requirement's minValues), so the cloud has that
	// many to choose from; MinValuesPolicy says what a node whose pods leave fewer does.
	MinValues       map[string]int
	MinValuesPolicy MinValuesPolicy
}

// MinValuesPolicy is what a node does whose pods leave its instance types fewer distinct values
// of a key than the pool's minValues.
type MinValuesPolicy string

const (
	// MinValuesStrict refuses the node: its pods go to other nodes or stay pending. The empty
	// policy is Strict.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort launches the node with the values there are, marked relaxed
	// (NewNode.MinValuesRelaxed).
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// ParseMinValuesPolicy is the policy --min-values-policy names: Strict or BestEffort, exactly.
func ParseMinValuesPolicy(s string) (MinValuesPolicy, error) {
	switch policy := MinValuesPolicy(s); policy {
	case MinValuesStrict, MinValuesBestEffort:
		return policy, nil
	}
	return "", fmt.Errorf("--min-values-policy must be Strict or BestEffort, not %q", s)
}

// FromProvisioner is a Provisioner as the scheduler reads it. Its status.resources count
// against its limits; a Provisioner has no weight of its own here, so NodePools of any
// positive weight come before it.
func FromProvisioner(p *v1alpha5.Provisioner, instanceTypes []*cloudprovider.InstanceType) Pool {
	pool := Pool{Key: pools.Provisioner(p.Name), Labels: maps.Clone(p.Spec.Labels), Taints: p.Spec.Taints, Used: p.Status.Resources, InstanceTypes: instanceTypes}
	for _, r := range p.Spec.Requirements {
		pool.Requirements = append(pool.Requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
	}
	if p.Spec.Limits != nil {
		pool.Limits = p.Spec.Limits.Resources
	}
	return pool
}

// FromNodePool is a NodePool as the scheduler reads it: its template's labels, requirements
// (with their minValues; the policy is the caller's) and taints, its weight, and its limits, against which its status.resources and node count (as
// v1.LimitNodes in status.resources or from the caller) count. A node's startup taints are
// not the pool's taints: pods need not tolerate them.
func FromNodePool(np *v1.NodePool, instanceTypes []*cloudprovider.InstanceType) Pool {
	template := &np.Spec.Template
	pool := Pool{Key: pools.NodePool(np.Name), Labels: map[string]string{}, Taints: v1.CoreTaints(template.Spec.Taints),
		Limits: corev1.ResourceList(np.Spec.Limits), Used: np.Status.Resources, InstanceTypes: instanceTypes}
	for k, v := range template.Labels {
		pool.Labels[k] = string(v)
	}
	if np.Spec.Weight != nil {
		pool.Weight = *np.Spec.Weight
	}
	for _, r := range template.Spec.Requirements {
		pool.Requirements = append(pool.Requirements, r.Core())
		if r.MinValues != nil {
			if pool.MinValues == nil {
				pool.MinValues = map[string]int{}
			}
			// Two requirements on one key: both minValues must hold.
			pool.MinValues[r.Key] = max(pool.MinValues[r.Key], *r.MinValues)
		}
	}
	return pool
}
