package nodejoiner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/kubelet"
	"karpenter.sh/karpenter/test/awsemulator"
)

// EC2Instances lists the emulator's free-standing instances; *awsemulator.Emulator implements it.
type EC2Instances interface {
	EC2Instances() []awsemulator.EC2Instance
}

// NewKubelets stand in for the kubelets of the EC2 instances Karpenter launches (CreateFleet):
// each running instance tagged as the cluster's registers its Node from its user data
// (KubeletNode), as the kubelet nodeadm configures does, once.
func NewKubelets(c client.Client, instances EC2Instances, clusterName string) *kubelet.Kubelets {
	return &kubelet.Kubelets{Client: c, Instances: &clusterInstances{instances: instances, clusterName: clusterName}}
}

// clusterInstances are the emulator's instances as the kubelets of a cluster see them, as they
// were at the last List: the kubelets call it once per pass, then KubeletNode per instance.
type clusterInstances struct {
	instances   EC2Instances
	clusterName string
	listed      map[string]awsemulator.EC2Instance
}

// List are the running instances tagged as the cluster's.
func (c *clusterInstances) List(context.Context) ([]*cloudprovider.Instance, error) {
	c.listed = map[string]awsemulator.EC2Instance{}
	var out []*cloudprovider.Instance
	for _, instance := range c.instances.EC2Instances() {
		c.listed[instance.ProviderID] = instance
		if instance.State == "running" && c.ofCluster(instance) {
			out = append(out, &cloudprovider.Instance{ID: instance.InstanceID, ProviderID: instance.ProviderID, State: cloudprovider.InstanceStateRunning})
		}
	}
	return out, nil
}

// KubeletNode is the Node a running instance of the cluster registers from its user data; a
// running instance of another cluster registers none here.
func (c *clusterInstances) KubeletNode(providerID string) (*corev1.Node, bool, error) {
	instance, ok := c.listed[providerID]
	switch {
	case !ok || instance.State != "running":
		return nil, false, nil
	case !c.ofCluster(instance):
		return nil, true, nil
	}
	node, err := KubeletNode(instance)
	return node, true, err
}

func (c *clusterInstances) ofCluster(instance awsemulator.EC2Instance) bool {
	return instance.Tags["kubernetes.io/cluster/"+c.clusterName] != ""
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
