package nodejoiner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/test/awsemulator"
)

// EC2Instances lists the emulator's free-standing instances; *awsemulator.Emulator implements it.
type EC2Instances interface {
	EC2Instances() []awsemulator.EC2Instance
}

// Kubelets stand in for the kubelets of the EC2 instances a Provisioner launches (CreateFleet):
// each running instance tagged as the cluster's registers its Node from its user data, as the
// kubelet nodeadm configures does, once: a Node deleted later is not registered again, since the
// kubelet of an instance being terminated is gone. An instance that already has a Node (by
// provider id, e.g. one an older Karpenter created itself) registers none.
type Kubelets struct {
	Client    client.Client
	Instances EC2Instances
	// ClusterName is the cluster the instances must be tagged for (kubernetes.io/cluster/<name>).
	ClusterName string
	// Logf, when set, receives one line per Node registered.
	Logf func(format string, args ...any)

	mu sync.Mutex
	// registered are the instances whose kubelet registered, or found, their Node.
	registered sets.Set[string]
}

// Sync registers the Node of each running instance of the cluster that has none yet.
func (k *Kubelets) Sync(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.registered == nil {
		k.registered = sets.New[string]()
	}
	var waiting []awsemulator.EC2Instance
	running := sets.New[string]()
	for _, instance := range k.Instances.EC2Instances() {
		if instance.State == "running" {
			running.Insert(instance.ProviderID)
		}
		if instance.State == "running" && instance.Tags["kubernetes.io/cluster/"+k.ClusterName] != "" && !k.registered.Has(instance.InstanceID) {
			waiting = append(waiting, instance)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	nodes := &corev1.NodeList{}
	if err := k.Client.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes, %w", err)
	}
	byProviderID := sets.New[string]()
	for i := range nodes.Items {
		byProviderID.Insert(nodes.Items[i].Spec.ProviderID)
	}
	var errs []error
	for _, instance := range waiting {
		if byProviderID.Has(instance.ProviderID) {
			k.registered.Insert(instance.InstanceID)
			continue
		}
		node, err := KubeletNode(instance)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := k.Client.Create(ctx, node); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// A Node of its name stands for an earlier instance of its address: the kubelet
				// tries again once it is gone.
				errs = append(errs, k.deleteStale(ctx, node, running))
			} else {
				errs = append(errs, fmt.Errorf("registering node %s for instance %s, %w", node.Name, instance.InstanceID, err))
			}
			continue
		}
		k.registered.Insert(instance.InstanceID)
		if k.Logf != nil {
			k.Logf("node joiner: kubelet of %s registered node %s", instance.InstanceID, node.Name)
		}
	}
	return errors.Join(errs...)
}

// deleteStale deletes the Node of node's name when it stands for an instance that no longer
// runs (EC2 gives a terminated instance's address, so its node name, to a later one), as the
// cloud node lifecycle controller does.
func (k *Kubelets) deleteStale(ctx context.Context, node *corev1.Node, running sets.Set[string]) error {
	existing := &corev1.Node{}
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(node), existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if existing.Spec.ProviderID == node.Spec.ProviderID || existing.DeletionTimestamp != nil || running.Has(existing.Spec.ProviderID) {
		return nil
	}
	if err := k.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting stale node %s of instance %s, %w", existing.Name, existing.Spec.ProviderID, err)
	}
	return nil
}

// KubeletNode is the Node the kubelet of an EC2 instance registers, for kwok to run: named as
// its private DNS name, with its provider id, the labels and taints its user data's
// --node-labels and --register-with-taints give, the well-known labels the kubelet sets itself,
// and the capacity and allocatable the instance type gives.
func KubeletNode(instance awsemulator.EC2Instance) (*corev1.Node, error) {
	flags, err := KubeletFlags(instance.UserData)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", instance.InstanceID, err)
	}
	capacity, err := resources(instance.InstanceID, instance.Capacity)
	if err != nil {
		return nil, err
	}
	allocatable, err := resources(instance.InstanceID, instance.Allocatable)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: instance.InstanceType,
		corev1.LabelTopologyZone:       instance.AvailabilityZone,
		corev1.LabelTopologyRegion:     region(instance.AvailabilityZone),
	}
	if arch := kubernetesArch(instance.Architecture); arch != "" {
		labels[corev1.LabelArchStable] = arch
	}
	for _, pair := range flagValues(flags, "--node-labels") {
		key, value, _ := strings.Cut(pair, "=")
		labels[key] = value
	}
	node := environment.KwokNode(instance.PrivateDNSName, labels, capacity)
	if len(allocatable) > 0 {
		node.Status.Allocatable = allocatable
	}
	node.Status.NodeInfo.Architecture = node.Labels[corev1.LabelArchStable]
	node.Spec.ProviderID = instance.ProviderID
	for _, rendered := range flagValues(flags, "--register-with-taints") {
		taint, err := parseTaint(rendered)
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", instance.InstanceID, err)
		}
		node.Spec.Taints = append(node.Spec.Taints, taint)
	}
	return node, nil
}

// nodeConfig is the part of nodeadm's NodeConfig a kubelet's flags are in.
type nodeConfig struct {
	Spec struct {
		Kubelet struct {
			Flags []string `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// KubeletFlags are the kubelet flags of the nodeadm NodeConfigs in user data (a MIME multi-part
// document, as the AL2023 EKS AMI reads it): nodeadm merges every NodeConfig part, a user's
// before Karpenter's, so their flags add up.
func KubeletFlags(userData string) ([]string, error) {
	parts, err := awsemulator.UserDataParts(userData)
	if err != nil {
		return nil, err
	}
	var flags []string
	found := false
	for _, part := range parts {
		if part.MediaType != awsemulator.NodeadmMediaType {
			continue
		}
		config := nodeConfig{}
		if err := yaml.Unmarshal([]byte(part.Body), &config); err != nil {
			return nil, fmt.Errorf("parsing the nodeadm NodeConfig, %w", err)
		}
		found = true
		flags = append(flags, config.Spec.Kubelet.Flags...)
	}
	if !found {
		return nil, errors.New("the user data has no nodeadm NodeConfig")
	}
	return flags, nil
}

// flagValues are the comma-separated values of the flag named name (--name=a,b).
func flagValues(flags []string, name string) []string {
	var out []string
	for _, flag := range flags {
		if value, ok := strings.CutPrefix(flag, name+"="); ok && value != "" {
			out = append(out, strings.Split(value, ",")...)
		}
	}
	return out
}

// parseTaint parses a taint as --register-with-taints writes it: key[=value]:Effect.
func parseTaint(rendered string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(rendered, ":")
	if !ok || effect == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect", rendered)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

// kubernetesArch is the kubernetes.io/arch of an EC2 architecture.
func kubernetesArch(ec2 string) string {
	switch ec2 {
	case "x86_64":
		return "amd64"
	case "arm64":
		return "arm64"
	}
	return ""
}
