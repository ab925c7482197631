package launcher

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
	karpscheduling "karpenter.sh/karpenter/pkg/scheduling"
)

// Pool is what a launch's NodeClaims come from: a Provisioner, whose spec.provider is its cloud
// configuration, or a NodePool with its node class. Exactly one of Provisioner and NodePool is
// set.
type Pool struct {
	Provisioner *v1alpha5.Provisioner
	NodePool    *v1.NodePool
	// NodeClass is the NodePool's class as read Ready (an EC2NodeClass on AWS).
	NodeClass client.Object
}

// Key identifies the pool.
func (p Pool) Key() pools.Key {
	if p.NodePool != nil {
		return pools.NodePool(p.NodePool.Name)
	}
	return pools.Provisioner(p.Provisioner.Name)
}

// Limits bound the sum of the pool's nodes' resources; nil when it has none.
func (p Pool) Limits() corev1.ResourceList {
	if p.NodePool != nil {
		return corev1.ResourceList(p.NodePool.Spec.Limits)
	}
	if p.Provisioner.Spec.Limits != nil {
		return p.Provisioner.Spec.Limits.Resources
	}
	return nil
}

// MinValues are the pool's minValues by requirement key: a NodePool's; nil for a Provisioner,
// whose requirements have none.
func (p Pool) MinValues() map[string]int {
	if p.NodePool == nil {
		return nil
	}
	return scheduling.FromNodePool(p.NodePool, nil).MinValues
}

// Labels are those Karpenter asks the cloud to register the pool's nodes with: the pool's own
// and its name under its label.
func (p Pool) Labels() map[string]string {
	labels := map[string]string{}
	if p.NodePool != nil {
		for k, v := range p.NodePool.Spec.Template.Labels {
			labels[k] = string(v)
		}
	} else {
		maps.Copy(labels, p.Provisioner.Spec.Labels)
	}
	key := p.Key()
	labels[key.LabelKey] = key.Name
	return labels
}

// chosenLabels are the labels the plan chose for a NodeClaim of the pool (Request.Labels): those
// it carries in no reserved domain (scheduling.ReservedLabelDomain) beside the pool's own.
func (p Pool) chosenLabels(nc *v1.NodeClaim) map[string]string {
	own := p.Labels()
	out := map[string]string{}
	for k, v := range nc.Labels {
		if _, ok := own[k]; !ok && !karpscheduling.ReservedLabelDomain(k) {
			out[k] = v
		}
	}
	return out
}

// Taints are those every node of the pool carries.
func (p Pool) Taints() []corev1.Taint {
	if p.NodePool != nil {
		return v1.CoreTaints(p.NodePool.Spec.Template.Spec.Taints)
	}
	return p.Provisioner.Spec.Taints
}

// constraints are what the cloud needs to list the pool's instance types.
func (p Pool) constraints() cloudprovider.Constraints {
	if p.NodePool != nil {
		return cloudprovider.Constraints{NodeClass: p.NodeClass}
	}
	return cloudprovider.Constraints{Provider: p.Provisioner.Spec.Provider}
}

// launchRequest is the cloud's request for count instances of the pool under the group's key,
// registering with the pool's labels and those the plan chose.
func (p Pool) launchRequest(candidates []cloudprovider.Candidate, chosen map[string]string, group string, count int) cloudprovider.LaunchRequest {
	labels := p.Labels()
	maps.Copy(labels, chosen)
	request := cloudprovider.LaunchRequest{Count: count, Candidates: candidates, Labels: labels, Taints: p.Taints(), IdempotencyKey: group}
	if p.NodePool != nil {
		request.NodePoolName = p.NodePool.Name
		request.NodeClass = p.NodeClass
		// The node registers with its startup taints too, as upstream's do: nothing schedules
		// there before whatever lifts them has run.
		request.Taints = append(request.Taints, v1.CoreTaints(p.NodePool.Spec.Template.Spec.StartupTaints)...)
		return request
	}
	request.ProvisionerName = p.Provisioner.Name
	request.Provider = p.Provisioner.Spec.Provider
	return request
}

// nodeClassRef is what the pool's NodeClaims name as their node class: the NodePool's
// EC2NodeClass, or the Provisioner itself, whose spec.provider its nodes launch from.
func (p Pool) nodeClassRef() *v1.NodeClassReference {
	if p.NodePool != nil {
		ref := *p.NodePool.Spec.Template.Spec.NodeClassRef
		return &ref
	}
	return &v1.NodeClassReference{Group: v1alpha5.SchemeGroupVersion.Group, Kind: "Provisioner", Name: p.Provisioner.Name}
}

// PoolOf reads the pool a NodeClaim was launched for, and for a NodePool its node class; a pool
// or class that is gone is a *PoolGoneError.
func PoolOf(ctx context.Context, c client.Reader, nc *v1.NodeClaim) (Pool, error) {
	key, ok := pools.Of(nc.Labels)
	if !ok && nc.Spec.NodeClassRef != nil && nc.Spec.NodeClassRef.Kind == "Provisioner" {
		// A NodeClaim created before it was labelled names its Provisioner as its class.
		key, ok = pools.Provisioner(nc.Spec.NodeClassRef.Name), true
	}
	if !ok {
		return Pool{}, fmt.Errorf("nodeclaim %s names no pool", nc.Name)
	}
	if !key.IsNodePool() {
		p := &v1alpha5.Provisioner{}
		if err := c.Get(ctx, client.ObjectKey{Name: key.Name}, p); err != nil {
			return Pool{}, goneOr(err, key, nc)
		}
		return Pool{Provisioner: p}, nil
	}
	np := &v1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: key.Name}, np); err != nil {
		return Pool{}, goneOr(err, key, nc)
	}
	ref := nc.Spec.NodeClassRef
	if ref == nil || ref.GroupKind() != (schema.GroupKind{Group: awsv1.SchemeGroupVersion.Group, Kind: "EC2NodeClass"}) {
		return Pool{}, fmt.Errorf("nodeclaim %s names node class %v, which this cloud does not know", nc.Name, ref)
	}
	class := &awsv1.EC2NodeClass{}
	if err := c.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return Pool{}, &PoolGoneError{What: fmt.Sprintf("ec2nodeclass %q", ref.Name)}
		}
		return Pool{}, fmt.Errorf("reading ec2nodeclass %s of nodeclaim %s, %w", ref.Name, nc.Name, err)
	}
	return Pool{NodePool: np, NodeClass: class}, nil
}

// PoolGoneError is the pool, or its node class, of a NodeClaim deleted since.
type PoolGoneError struct {
	What string
}

func (e *PoolGoneError) Error() string {
	return e.What + " is gone"
}

func goneOr(err error, key pools.Key, nc *v1.NodeClaim) error {
	if client.IgnoreNotFound(err) == nil {
		return &PoolGoneError{What: key.String()}
	}
	return fmt.Errorf("reading %s of nodeclaim %s, %w", key, nc.Name, err)
}

// Object is the pool's object, which Events about its launches are on.
func (p Pool) Object() client.Object {
	if p.NodePool != nil {
		return p.NodePool
	}
	return p.Provisioner
}
