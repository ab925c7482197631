package aws

import (
	"context"
	"fmt"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// amiArchitectures maps a node's GOARCH to the architecture in the AL2023 parameter path.
var amiArchitectures = map[string]string{"amd64": "x86_64", "arm64": "arm64"}

// amiParameter is the public SSM parameter holding the recommended EKS-optimized Amazon Linux
// 2023 AMI of a Kubernetes minor version for an architecture. AL2023 is the only family: EKS
// publishes it for every version it supports, while Amazon Linux 2 ends at 1.32, and one family
// keeps one user-data format (nodeadm) to build and test.
func amiParameter(kubernetesVersion, arch string) (string, error) {
	amiArch, ok := amiArchitectures[arch]
	if !ok {
		return "", fmt.Errorf("no EKS-optimized AMI for architecture %q", arch)
	}
	return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", kubernetesVersion, amiArch), nil
}

// resolveAMI returns the AMI id for nodes of the architecture.
func (i *Instances) resolveAMI(ctx context.Context, arch string) (string, error) {
	if i.opts.KubernetesVersion == "" {
		return "", fmt.Errorf("choosing an AMI needs the cluster's Kubernetes version")
	}
	name, err := amiParameter(i.opts.KubernetesVersion, arch)
	if err != nil {
		return "", err
	}
	if cached, ok := i.amis.Get(name); ok {
		return cached.(string), nil
	}
	c, err := i.clients()
	if err != nil {
		return "", err
	}
	out, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(name)})
	if err != nil {
		return "", callError(err, "ssm:GetParameter", "parameter "+name, "ParameterNotFound")
	}
	if out.Parameter == nil || sdkaws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("parameter %s has no value", name)
	}
	ami := sdkaws.ToString(out.Parameter.Value)
	i.amis.Add(name, ami, amiCacheTTL)
	return ami, nil
}
