package disruption

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// offeredTypes knows whether the cloud still offers an instance type to a class, for
// InstanceTypeNotFound drift. It asks at most once per driftRecheck for each class and type: a
// NodeClaim is reconciled at every pod arriving on or leaving its node, and the catalogue and
// the class's subnets and images change in minutes at the quickest.
type offeredTypes struct {
	instances cloudprovider.InstanceProvider
	clock     clock.Clock

	mu      sync.Mutex
	checked map[offeredKey]offeredAnswer
}

type offeredKey struct{ class, instanceType string }

type offeredAnswer struct {
	gone bool
	at   time.Time
}

// gone is whether the cloud no longer offers the NodeClaim's instance type to its class, in any
// zone (upstream's InstanceTypeNotFound): retired from the region's catalogue, or no longer in a
// zone of the class's subnets or bootable by its images. An offering out of capacity is still
// offered. False when not known — no instance provider, the catalogue not read yet — so that
// nothing drifts by it meanwhile.
func (o *offeredTypes) gone(ctx context.Context, nc *v1.NodeClaim, class *awsv1.EC2NodeClass) bool {
	name := nc.Labels[corev1.LabelInstanceTypeStable]
	if o.instances == nil || name == "" {
		return false
	}
	key, now := offeredKey{class: class.Name, instanceType: name}, o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if answer, ok := o.checked[key]; ok && now.Sub(answer.at) < driftRecheck {
		return answer.gone
	}
	offered, err := o.instances.InstanceTypes(ctx, cloudprovider.Constraints{NodeClass: class, Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{name}}}})
	if err != nil {
		log.FromContext(ctx).V(1).Info("not checking whether the instance type is still offered", "nodeclaim", nc.Name, "error", err.Error())
		return false
	}
	o.checked[key] = offeredAnswer{gone: len(offered) == 0, at: now}
	return len(offered) == 0
}
