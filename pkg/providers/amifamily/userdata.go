package amifamily

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// nodeConfig is the part of nodeadm's NodeConfig (node.eks.aws/v1alpha1) Karpenter writes; the
// AL2023 EKS AMI reads it from the instance's user data at boot and joins the node.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster nodeConfigCluster `json:"cluster"`
	// Instance is left out unless set, so a node that asks nothing of its instance renders the
	// user data it always did (and keeps its launch template).
	Instance *nodeConfigInstance `json:"instance,omitempty"`
	Kubelet  nodeConfigKubelet   `json:"kubelet"`
}

// nodeConfigInstance is how nodeadm sets the instance up before the kubelet starts.
type nodeConfigInstance struct {
	LocalStorage nodeConfigLocalStorage `json:"localStorage"`
}

// nodeConfigLocalStorage says what nodeadm does with the instance-store NVMe disks: RAID0 makes
// one array of them (/dev/md/0, mounted at /mnt/k8s-disks/0) and binds the kubelet's,
// containerd's and the pods' log directories onto it.
type nodeConfigLocalStorage struct {
	Strategy string `json:"strategy"`
}

// nodeadmLocalStorageRAID0 is nodeadm's localStorage strategy for awsv1.InstanceStorePolicyRAID0.
const nodeadmLocalStorageRAID0 = "RAID0"

type nodeConfigCluster struct {
	Name              string `json:"name"`
	APIServerEndpoint string `json:"apiServerEndpoint"`
	// CertificateAuthority is the PEM bundle, base64-encoded (a []byte marshals as base64).
	CertificateAuthority []byte `json:"certificateAuthority"`
	// CIDR is the cluster's service CIDR: nodeadm derives the cluster DNS address from it.
	CIDR string `json:"cidr"`
}

type nodeConfigKubelet struct {
	// Config is merged into the kubelet's KubeletConfiguration.
	Config nodeConfigKubeletConfig `json:"config"`
	Flags  []string                `json:"flags,omitempty"`
}

type nodeConfigKubeletConfig struct {
	// MaxPods is the provider's figure for the instance type, so the node's allocatable pods
	// match what the scheduler assumed; it shadows the class's, which that figure already took.
	MaxPods int64 `json:"maxPods"`
	// KubeletConfiguration is an EC2NodeClass's spec.kubelet, its fields named as the kubelet's
	// KubeletConfiguration; nil for a Provisioner, which leaves the AMI's defaults.
	*awsv1.KubeletConfiguration `json:",inline"`
}

// kubeletConfig is the kubelet configuration nodeadm merges into the AMI's.
func kubeletConfig(maxPods int64, kubelet *awsv1.KubeletConfiguration) nodeConfigKubeletConfig {
	return nodeConfigKubeletConfig{MaxPods: maxPods, KubeletConfiguration: kubelet}
}

// nodeadmContentType marks the MIME part nodeadm reads its NodeConfig from.
const nodeadmContentType = "application/node.eks.aws"

// userDataBoundary is fixed, so equal inputs render equal user data and share a launch template.
const userDataBoundary = "//karpenter.sh//"

// NodeBootstrap is what a node needs to join the cluster.
type NodeBootstrap struct {
	ClusterName     string
	ClusterEndpoint string
	ClusterCABundle []byte
	ServiceCIDR     string
	Labels          map[string]string
	Taints          []corev1.Taint
	// MaxPods is the kubelet's maxPods: the instance type's pods capacity, or the class's
	// spec.kubelet.maxPods.
	MaxPods int64
	// Kubelet is an EC2NodeClass's spec.kubelet; nil for a Provisioner.
	Kubelet *awsv1.KubeletConfiguration
	// InstanceStorePolicy is an EC2NodeClass's spec.instanceStorePolicy; nil (always for a
	// Provisioner) leaves the instance-store disks alone.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
	// AMIName is the name of the AMI the node boots, "" when unknown: a Bottlerocket AMI's
	// carries its release, which decides how its instance-store disks are bound.
	AMIName string
}

// UserData is a MIME multi-part document with one nodeadm NodeConfig part, as the AL2023
// EKS-optimized AMI expects.
func UserData(in NodeBootstrap) (string, error) {
	raw, err := nodeadmConfig(in)
	if err != nil {
		return "", err
	}
	return mimeDocument([]mimePart{{header: textproto.MIMEHeader{"Content-Type": {nodeadmContentType}}, body: raw}})
}

// nodeadmConfig is the NodeConfig that joins the node, as YAML.
func nodeadmConfig(in NodeBootstrap) ([]byte, error) {
	config := nodeConfig{
		APIVersion: "node.eks.aws/v1alpha1",
		Kind:       "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: nodeConfigCluster{
				Name:                 in.ClusterName,
				APIServerEndpoint:    in.ClusterEndpoint,
				CertificateAuthority: in.ClusterCABundle,
				CIDR:                 in.ServiceCIDR,
			},
			Kubelet: nodeConfigKubelet{Config: kubeletConfig(in.MaxPods, in.Kubelet), Flags: kubeletFlags(in.Labels, in.Taints)},
		},
	}
	if in.InstanceStorePolicy.RAID0() {
		config.Spec.Instance = &nodeConfigInstance{LocalStorage: nodeConfigLocalStorage{Strategy: nodeadmLocalStorageRAID0}}
	}
	raw, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encoding the nodeadm NodeConfig, %w", err)
	}
	return raw, nil
}

// mimePart is one part of a MIME multi-part user data document.
type mimePart struct {
	header textproto.MIMEHeader
	body   []byte
}

// mimeDocument is the parts as one MIME multi-part document, as cloud-init and nodeadm read it.
func mimeDocument(parts []mimePart) (string, error) {
	var body bytes.Buffer
	writer := multipart.NewWriter(&body)
	if err := writer.SetBoundary(userDataBoundary); err != nil {
		return "", fmt.Errorf("setting the user data's MIME boundary, %w", err)
	}
	for _, p := range parts {
		part, err := writer.CreatePart(p.header)
		if err != nil {
			return "", fmt.Errorf("writing the user data, %w", err)
		}
		if _, err := part.Write(p.body); err != nil {
			return "", fmt.Errorf("writing the user data, %w", err)
		}
	}
	if err := writer.Close(); err != nil {
		return "", fmt.Errorf("writing the user data, %w", err)
	}
	return fmt.Sprintf("MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=%q\r\n\r\n%s", userDataBoundary, body.String()), nil
}

// unregisteredTaint is on the node from its registration until Karpenter has synced its
// NodeClaim onto it: nothing runs there before it has the NodeClaim's labels and taints.
var unregisteredTaint = corev1.Taint{Key: v1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}

// kubeletFlags register the node with its labels (sorted, so the user data is stable) and
// taints, the unregistered taint among them, as upstream Karpenter's user data does.
func kubeletFlags(labels map[string]string, taints []corev1.Taint) []string {
	taints = withUnregistered(taints)
	var flags []string
	if len(labels) > 0 {
		flags = append(flags, "--node-labels="+joinPairs(labels, "="))
	}
	var rendered []string
	for _, t := range taints {
		rendered = append(rendered, t.ToString())
	}
	return append(flags, "--register-with-taints="+strings.Join(rendered, ","))
}

// withUnregistered are the taints with the unregistered taint among them.
func withUnregistered(taints []corev1.Taint) []corev1.Taint {
	if slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&unregisteredTaint) }) {
		return taints
	}
	return append(slices.Clone(taints), unregisteredTaint)
}
