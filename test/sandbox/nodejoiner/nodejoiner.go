// Package nodejoiner stands in for kubelets joining a cluster: for every in-service instance of
// the AWS emulator's Auto Scaling groups it registers a Node that kwok runs (providerID
// aws:///<zone>/<instance-id>, the group's labels and taints, the instance's capacity), and it
// deletes the Node and its pods once its instance stops being in service, as the cloud node
// lifecycle controller and pod garbage collection would. For the EC2 instances Karpenter
// launches (CreateFleet), the kubelets of NewKubelets register the Node from the instance's user
// data, as the kubelet nodeadm configures does; Karpenter matches it to its NodeClaim by
// provider id. Nodes
// are created complete, with what the kubelet reports and kwok's annotation: kwok v0.7.0 only
// takes a Node it sees created (it holds the Node's Lease from then on), never one annotated
// later. So the Node is Ready about a second after its registration, not after the instance's
// boot.
package nodejoiner

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/kubelet"
	"karpenter.sh/karpenter/test/awsemulator"
)

const (
	// JoinedLabel marks the Nodes the joiner registered; it never touches other Nodes.
	JoinedLabel = "sandbox.karpenter.sh/joined"
	// GroupLabel names the Auto Scaling group of a joined Node's instance.
	GroupLabel = "sandbox.karpenter.sh/auto-scaling-group"

	inService = "InService"
)

// Instances lists the emulator's instances; *awsemulator.Emulator implements it.
type Instances interface {
	Instances(group string) []awsemulator.Instance
}

// Joiner keeps Nodes in step with in-service instances.
type Joiner struct {
	Client    client.Client
	Instances Instances
	// Interval between passes; one second when zero.
	Interval time.Duration
	// Logf, when set, receives one line per Node registered or removed.
	Logf func(format string, args ...any)
	// Kubelets, when set, register the Nodes of the EC2 instances a Provisioner launches at
	// each pass too.
	Kubelets *kubelet.Kubelets
}

// Run syncs every Interval until ctx is done. A failed pass is logged and retried.
func (j *Joiner) Run(ctx context.Context) {
	interval := j.Interval
	if interval == 0 {
		interval = time.Second
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := j.Sync(ctx); err != nil && ctx.Err() == nil {
			j.logf("node joiner: %v", err)
		}
		if j.Kubelets != nil {
			if err := j.Kubelets.Sync(ctx); err != nil && ctx.Err() == nil {
				j.logf("node joiner: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Sync makes one pass: register a Node per in-service instance that has none, delete joined
// Nodes whose instance is no longer in service.
func (j *Joiner) Sync(ctx context.Context) error {
	wanted := map[string]awsemulator.Instance{}
	for _, instance := range j.Instances.Instances("") {
		if instance.LifecycleState == inService {
			wanted[NodeName(instance)] = instance
		}
	}
	nodes := &corev1.NodeList{}
	if err := j.Client.List(ctx, nodes, client.HasLabels{JoinedLabel}); err != nil {
		return fmt.Errorf("listing joined nodes, %w", err)
	}
	var errs []error
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if _, ok := wanted[node.Name]; ok {
			delete(wanted, node.Name)
			continue
		}
		if err := j.Client.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting node %s, %w", node.Name, err))
			continue
		}
		// Its pods died with the instance; remove them as pod garbage collection would, without
		// its 40 s quarantine, so their controllers replace them at once.
		if err := j.deletePods(ctx, node.Name); err != nil {
			errs = append(errs, err)
		}
		j.logf("node joiner: removed node %s (instance gone)", node.Name)
	}
	for _, instance := range wanted {
		node, err := Node(instance)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := j.Client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("registering node %s, %w", node.Name, err))
			continue
		}
		j.logf("node joiner: registered node %s for %s", node.Name, instance.AutoScalingGroupName)
	}
	return errors.Join(errs...)
}

func (j *Joiner) deletePods(ctx context.Context, nodeName string) error {
	pods := &corev1.PodList{}
	if err := j.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": nodeName}); err != nil {
		return fmt.Errorf("listing the pods of node %s, %w", nodeName, err)
	}
	var errs []error
	for i := range pods.Items {
		if err := j.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s/%s of node %s, %w", pods.Items[i].Namespace, pods.Items[i].Name, nodeName, err))
		}
	}
	return errors.Join(errs...)
}

func (j *Joiner) logf(format string, args ...any) {
	if j.Logf != nil {
		j.Logf(format, args...)
	}
}

// NodeName is the name of an instance's Node: its instance id, as a kubelet with
// --hostname-override set to it would register.
func NodeName(instance awsemulator.Instance) string {
	return instance.InstanceID
}

// Node is the Node a kubelet on the instance would register, for kwok to run.
func Node(instance awsemulator.Instance) (*corev1.Node, error) {
	capacity, err := resources(instance.InstanceID, instance.Capacity)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		JoinedLabel:                    "true",
		GroupLabel:                     instance.AutoScalingGroupName,
		corev1.LabelInstanceTypeStable: instance.InstanceType,
		corev1.LabelTopologyZone:       instance.AvailabilityZone,
		corev1.LabelTopologyRegion:     region(instance.AvailabilityZone),
		"eks.amazonaws.com/nodegroup":  nodegroup(instance.EKSNodeGroup),
	}
	if instance.EKSNodeGroup == "" {
		delete(labels, "eks.amazonaws.com/nodegroup")
	}
	for key, value := range instance.Labels {
		labels[key] = value
	}
	node := environment.KwokNode(NodeName(instance), labels, capacity)
	node.Spec.ProviderID = instance.ProviderID
	for _, taint := range instance.Taints {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect)})
	}
	return node, nil
}

// resources parses an instance's capacity as the emulator gives it.
func resources(instanceID string, capacity map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, value := range capacity {
		quantity, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("instance %s: capacity %s=%q, %w", instanceID, name, value, err)
		}
		out[corev1.ResourceName(name)] = quantity
	}
	return out, nil
}

// region is the region of an availability zone: us-west-2a → us-west-2.
func region(zone string) string {
	if len(zone) > 1 {
		return zone[:len(zone)-1]
	}
	return zone
}

// nodegroup is the node group name of <cluster>/<nodegroup>, as EKS labels its nodes.
func nodegroup(clusterAndName string) string {
	for i := len(clusterAndName) - 1; i >= 0; i-- {
		if clusterAndName[i] == '/' {
			return clusterAndName[i+1:]
		}
	}
	return clusterAndName
}
